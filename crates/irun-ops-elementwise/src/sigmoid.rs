//! Sigmoid-1: `1 / (1 + e^-x)`; `+inf -> 1`, `-inf -> 0`.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Sigmoid;

impl UnaryKind for Sigmoid {
    const NAME: &'static str = "Sigmoid-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Sigmoid {}, values);
        true
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        R::c(1.0) / (R::c(1.0) + (-x).exp())
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Sigmoid>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn logistic() {
        let out = run(
            &Unary(Sigmoid),
            vec![f32s(&[3], &[0., f32::INFINITY, f32::NEG_INFINITY])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[3], &[0.5, 1., 0.]));
        let out = run(&Unary(Sigmoid), vec![f64s(&[1], &[2.])]).unwrap();
        assert_eq!(out, f64s(&[1], &[1. / (1. + (-2f64).exp())]));
    }
}
