//! LogicalOr-1: `a || b` on booleans, numpy broadcasting.

use crate::attrs::AttrReader;
use crate::binary::{Binary, Logic, LogicKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct LogicalOr;

impl Logic for LogicalOr {
    const NAME: &'static str = "LogicalOr-1";

    #[inline(always)]
    fn apply(a: bool, b: bool) -> bool {
        a || b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<LogicKind<LogicalOr>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn truth_table() {
        let op = logic::<LogicalOr>();
        let out = run(
            &op,
            vec![
                bools(&[2, 2], &[false, false, true, true]),
                bools(&[2], &[false, true]),
            ],
        )
        .unwrap();
        assert_eq!(out, bools(&[2, 2], &[false, true, true, true]));
    }
}
