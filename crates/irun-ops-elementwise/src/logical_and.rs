//! LogicalAnd-1: `a && b` on booleans (other types are rejected), numpy broadcasting.

use crate::attrs::AttrReader;
use crate::binary::{Binary, Logic, LogicKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct LogicalAnd;

impl Logic for LogicalAnd {
    const NAME: &'static str = "LogicalAnd-1";

    #[inline(always)]
    fn apply(a: bool, b: bool) -> bool {
        a && b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<LogicKind<LogicalAnd>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn truth_table_and_type_rule() {
        assert_eq!(truth_table::<LogicalAnd>(), [false, false, false, true]);
        let e = infer_err(&logic::<LogicalAnd>(), &[fact(I32, "2"), fact(I32, "2")]);
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }
}
