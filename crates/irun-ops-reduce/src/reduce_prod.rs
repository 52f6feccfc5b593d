//! ReduceProd-1: the product over `axes`; integers wrap; over an empty extent, 1.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::Prod, "ReduceProd-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::Prod,
            keep_dims,
            name: "ReduceProd-1",
        }
    }

    #[test]
    fn products() {
        assert_eq!(
            run(
                &op(false),
                vec![f32s(&[2, 2], &[1., 2., 3., 4.]), i64s(&[1], &[0])]
            ),
            f32s(&[2], &[3., 8.])
        );
        assert_eq!(
            run(&op(false), vec![u8s(&[2], &[16, 17]), i64s(&[], &[0])]),
            u8s(&[], &[16])
        );
        assert_eq!(
            run(&op(false), vec![i64s(&[0], &[]), i64s(&[], &[0])]),
            i64s(&[], &[1])
        );
    }
}
