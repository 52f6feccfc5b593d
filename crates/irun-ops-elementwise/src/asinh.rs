//! Asinh-3: the inverse hyperbolic sine (written `opset4`); integer inputs are not implemented.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Asinh;

impl UnaryKind for Asinh {
    const NAME: &'static str = "Asinh-3";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.asinh()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Asinh>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::f64::consts::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(Asinh), vec![f64s(&[2], &[0.0, 0.75])]).unwrap();
        let want = [0.0, LN_2];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
