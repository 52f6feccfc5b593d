//! ReduceL2-4: the square root of the sum of squares over `axes`; floats only (the reference
//! has no integer L2: E0603).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::L2, "ReduceL2-4")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::L2,
            keep_dims,
            name: "ReduceL2-4",
        }
    }

    #[test]
    fn l2() {
        assert_eq!(
            run(&op(true), vec![f32s(&[1, 2], &[3., 4.]), i64s(&[], &[1])]),
            f32s(&[1, 1], &[5.])
        );
        let e = op(false)
            .eval(vec![Arc::new(i32s(&[1], &[3])), Arc::new(i64s(&[], &[0]))])
            .unwrap_err();
        assert_eq!(e.code, codes::UNSUPPORTED_TYPE);
    }
}
