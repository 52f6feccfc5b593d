//! Exp-1: `e^x`. f64 is computed in f64 (OpenVINO CPU computes it in f32: `exp(100)`
//! saturates there).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Exp;

impl UnaryKind for Exp {
    const NAME: &'static str = "Exp-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Exp {}, values);
        true
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.exp()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Exp>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn exponential_in_the_own_type() {
        let out = run(&Unary(Exp), vec![f64s(&[2], &[0., 100.])]).unwrap();
        assert_eq!(out, f64s(&[2], &[1., 100f64.exp()]));
        let e = run(&Unary(Exp), vec![i32s(&[1], &[3])]).unwrap_err();
        assert_eq!(e.code, codes::UNSUPPORTED_TYPE);
    }
}
