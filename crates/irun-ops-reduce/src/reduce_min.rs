//! ReduceMin-1: the smallest value over `axes`; NaN propagates; over an empty extent, +inf
//! (integers: the type's highest value).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::Min, "ReduceMin-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::Min,
            keep_dims,
            name: "ReduceMin-1",
        }
    }

    #[test]
    fn minima() {
        assert_eq!(
            run(&op(false), vec![u8s(&[3], &[7, 2, 9]), i64s(&[], &[0])]),
            u8s(&[], &[2])
        );
        assert_eq!(
            run(&op(false), vec![i32s(&[0], &[]), i64s(&[], &[0])]),
            i32s(&[], &[i32::MAX])
        );
    }
}
