//! Tan-1: the tangent; integer inputs are not implemented.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Tan;

impl UnaryKind for Tan {
    const NAME: &'static str = "Tan-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.tan()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Tan>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::f64::consts::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(Tan), vec![f64s(&[2], &[0.0, FRAC_PI_4])]).unwrap();
        let want = [0.0, FRAC_PI_4.tan()];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
