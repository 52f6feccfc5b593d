//! ReduceMean-1: the mean over `axes`; integers truncate toward 0 (`-5 / 3 = -1`, the
//! reference); over an empty extent, 0.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::Mean, "ReduceMean-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::Mean,
            keep_dims,
            name: "ReduceMean-1",
        }
    }

    #[test]
    fn means() {
        let x = f32s(&[2, 2], &[1., 2., 4., 8.]);
        assert_eq!(
            run(&op(false), vec![x, i64s(&[1], &[1])]),
            f32s(&[2], &[1.5, 6.])
        );
        assert_eq!(
            run(&op(false), vec![i32s(&[3], &[-1, -2, -2]), i64s(&[], &[0])]),
            i32s(&[], &[-1])
        );
        assert_eq!(
            run(&op(false), vec![f32s(&[0], &[]), i64s(&[], &[0])]),
            f32s(&[], &[0.])
        );
    }
}
