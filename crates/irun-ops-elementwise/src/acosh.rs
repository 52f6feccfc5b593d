//! Acosh-3: the inverse hyperbolic cosine (NaN below 1; written `opset4`); integer inputs are not implemented.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Acosh;

impl UnaryKind for Acosh {
    const NAME: &'static str = "Acosh-3";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.acosh()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Acosh>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::f64::consts::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(Acosh), vec![f64s(&[2], &[1.0, 1.25])]).unwrap();
        let want = [0.0, LN_2];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
