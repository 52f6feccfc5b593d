//! ReduceL1-4: the sum of absolute values over `axes`; integers wrap.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::L1, "ReduceL1-4")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::L1,
            keep_dims,
            name: "ReduceL1-4",
        }
    }

    #[test]
    fn l1() {
        assert_eq!(
            run(
                &op(false),
                vec![f32s(&[3], &[-1., 2., -3.]), i64s(&[], &[0])]
            ),
            f32s(&[], &[6.])
        );
        assert_eq!(
            run(&op(false), vec![i32s(&[2], &[-4, 1]), i64s(&[], &[0])]),
            i32s(&[], &[5])
        );
    }
}
