//! Erf-1: the error function (libm).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Erf;

impl UnaryKind for Erf {
    const NAME: &'static str = "Erf-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Erf {}, values);
        true
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.erf()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Erf>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn error_function() {
        let out = run(&Unary(Erf), vec![f64s(&[3], &[0., f64::INFINITY, 0.5])]).unwrap();
        assert_eq!(out, f64s(&[3], &[0., 1., libm::erf(0.5)]));
    }
}
