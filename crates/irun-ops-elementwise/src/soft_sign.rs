//! SoftSign-9: `x / (1 + |x|)`, floats.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct SoftSign;

impl UnaryKind for SoftSign {
    const NAME: &'static str = "SoftSign-9";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x / (R::c(1.0) + x.abs())
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<SoftSign>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn known_values() {
        let out = run(&Unary(SoftSign), vec![f64s(&[3], &[0.0, 1.0, -3.0])]).unwrap();
        let want = [0.0, 0.5, -0.75];
        for (got, want) in out.values::<f64>().unwrap().iter().zip(want) {
            assert!(
                (got - want).abs() <= 1e-15 * (1.0 + want.abs()),
                "{got} vs {want}"
            );
        }
    }
}
