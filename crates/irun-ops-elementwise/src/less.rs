//! Less-1: `a < b` into booleans; false when either is NaN; `false < true`.

use crate::attrs::AttrReader;
use crate::binary::{Binary, Compare, CompareKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Less;

impl Compare for Less {
    const NAME: &'static str = "Less-1";

    #[inline(always)]
    fn apply<T: PartialOrd>(a: T, b: T) -> bool {
        a < b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<CompareKind<Less>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn ordered_comparison() {
        let op = compare::<Less>();
        let out = run(
            &op,
            vec![bools(&[2], &[false, true]), bools(&[2], &[true, true])],
        )
        .unwrap();
        assert_eq!(out, bools(&[2], &[true, false]));
        let out = run(&op, vec![u64s(&[2], &[u64::MAX, 1]), u64s(&[], &[2])]).unwrap();
        assert_eq!(out, bools(&[2], &[false, true]));
    }
}
