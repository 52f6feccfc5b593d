//! IsInf-10: whether each value is an infinity; `detect_positive` and `detect_negative`
//! (both true when omitted) choose which.

use crate::attrs::AttrReader;
use crate::float_class::{Classify, FloatClass};
use crate::op::{Op, OpError};

#[derive(Debug)]
pub struct IsInf {
    pub positive: bool,
    pub negative: bool,
}

impl FloatClass for IsInf {
    const NAME: &'static str = "IsInf-10";

    fn test(&self, x: f64) -> bool {
        (self.positive && x == f64::INFINITY) || (self.negative && x == f64::NEG_INFINITY)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Classify(IsInf {
        positive: a.bool_or("detect_positive", true)?,
        negative: a.bool_or("detect_negative", true)?,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn either_infinity_as_asked() {
        let x = || f64s(&[4], &[f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0]);
        let op = |positive, negative| Classify(IsInf { positive, negative });
        let out = run(&op(true, true), vec![x()]).unwrap();
        assert_eq!(out, bools(&[4], &[true, true, false, false]));
        let out = run(&op(false, true), vec![x()]).unwrap();
        assert_eq!(out, bools(&[4], &[false, true, false, false]));
        let out = run(&op(true, false), vec![x()]).unwrap();
        assert_eq!(out, bools(&[4], &[true, false, false, false]));
    }
}
