//! LessEqual-1: `a <= b` into booleans; false when either is NaN.

use crate::attrs::AttrReader;
use crate::binary::{Binary, Compare, CompareKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct LessEqual;

impl Compare for LessEqual {
    const NAME: &'static str = "LessEqual-1";

    #[inline(always)]
    fn apply<T: PartialOrd>(a: T, b: T) -> bool {
        a <= b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<CompareKind<LessEqual>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn ordered_comparison() {
        let op = compare::<LessEqual>();
        let out = run(&op, vec![f64s(&[3], &[1., 2., f64::NAN]), f64s(&[], &[1.])]).unwrap();
        assert_eq!(out, bools(&[3], &[true, false, false]));
    }
}
