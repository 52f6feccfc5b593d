//! Greater-1: `a > b` into booleans; false when either is NaN (the reference, torch and numpy;
//! OpenVINO CPU says true).

use crate::attrs::AttrReader;
use crate::binary::{Binary, Compare, CompareKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Greater;

impl Compare for Greater {
    const NAME: &'static str = "Greater-1";

    #[inline(always)]
    fn apply<T: PartialOrd>(a: T, b: T) -> bool {
        a > b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<CompareKind<Greater>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn nan_compares_false() {
        let op = compare::<Greater>();
        let out = run(
            &op,
            vec![f32s(&[3], &[f32::NAN, 2., 1.]), f32s(&[3], &[1., 1., 1.])],
        )
        .unwrap();
        assert_eq!(out, bools(&[3], &[false, true, false]));
        let out = run(&op, vec![bools(&[1], &[true]), bools(&[1], &[false])]).unwrap();
        assert_eq!(out, bools(&[1], &[true]));
    }
}
