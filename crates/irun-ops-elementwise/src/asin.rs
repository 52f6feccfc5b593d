//! Asin-1: the arcsine (NaN outside [-1, 1]); integer inputs are not implemented.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Asin;

impl UnaryKind for Asin {
    const NAME: &'static str = "Asin-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.asin()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Asin>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::f64::consts::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(Asin), vec![f64s(&[3], &[1.0, -1.0, 0.0])]).unwrap();
        let want = [FRAC_PI_2, -FRAC_PI_2, 0.0];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
