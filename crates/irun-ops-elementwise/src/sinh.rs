//! Sinh-1: the hyperbolic sine; integer inputs are not implemented.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Sinh;

impl UnaryKind for Sinh {
    const NAME: &'static str = "Sinh-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.sinh()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Sinh>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::f64::consts::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(Sinh), vec![f64s(&[2], &[0.0, 1.0])]).unwrap();
        let want = [0.0, (E - 1.0 / E) / 2.0];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
