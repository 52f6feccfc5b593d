//! NotEqual-1: `a != b` into booleans; NaN differs from everything, itself included.

use crate::attrs::AttrReader;
use crate::binary::{Binary, Compare, CompareKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct NotEqual;

impl Compare for NotEqual {
    const NAME: &'static str = "NotEqual-1";

    #[inline(always)]
    fn apply<T: PartialOrd>(a: T, b: T) -> bool {
        a != b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<CompareKind<NotEqual>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn nan_differs_from_itself() {
        let op = compare::<NotEqual>();
        let out = run(
            &op,
            vec![f32s(&[2], &[f32::NAN, 1.]), f32s(&[2], &[f32::NAN, 1.])],
        )
        .unwrap();
        assert_eq!(out, bools(&[2], &[true, false]));
    }
}
