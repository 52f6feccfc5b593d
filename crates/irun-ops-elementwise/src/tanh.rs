//! Tanh-1: the hyperbolic tangent.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Tanh;

impl UnaryKind for Tanh {
    const NAME: &'static str = "Tanh-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Tanh {}, values);
        true
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.tanh()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Tanh>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn hyperbolic_tangent() {
        let out = run(&Unary(Tanh), vec![f32s(&[3], &[0., 1., -20.])]).unwrap();
        assert_eq!(out, f32s(&[3], &[0., 1f32.tanh(), -1.]));
    }
}
