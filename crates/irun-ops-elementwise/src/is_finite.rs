//! IsFinite-10: whether each value is neither NaN nor infinite.

use crate::attrs::AttrReader;
use crate::float_class::{Classify, FloatClass};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct IsFinite;

impl FloatClass for IsFinite {
    const NAME: &'static str = "IsFinite-10";

    fn test(&self, x: f64) -> bool {
        x.is_finite()
    }
}

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Classify(IsFinite)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn finite_values_only() {
        let x = f32s(
            &[5],
            &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -0.0],
        );
        let out = run(&Classify(IsFinite), vec![x]).unwrap();
        assert_eq!(out, bools(&[5], &[false, false, false, true, true]));
    }
}
