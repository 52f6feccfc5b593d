//! IsNaN-10: whether each value is NaN.

use crate::attrs::AttrReader;
use crate::float_class::{Classify, FloatClass};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct IsNaN;

impl FloatClass for IsNaN {
    const NAME: &'static str = "IsNaN-10";

    fn test(&self, x: f64) -> bool {
        x.is_nan()
    }
}

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Classify(IsNaN)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn nan_only() {
        let x = f16s(&[4], &[f16::NAN, f16::INFINITY, f16::ZERO, f16::NEG_ONE]);
        let out = run(&Classify(IsNaN), vec![x]).unwrap();
        assert_eq!(out, bools(&[4], &[true, false, false, false]));
        let e = Classify(IsNaN).infer(&[fact(I32, "2")]).unwrap_err();
        assert!(e.message.contains("got i32"), "{}", e.message);
    }
}
