//! Gelu-2 and Gelu-7: the erf form `0.5 x (1 + erf(x / sqrt 2))`, or with Gelu-7's
//! `approximation_mode="tanh"`, `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.
//! `Gelu(+inf) = +inf` (the reference; OpenVINO CPU gives NaN).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug)]
pub struct Gelu {
    /// Gelu-7 `approximation_mode="tanh"`.
    pub tanh: bool,
}

impl UnaryKind for Gelu {
    const NAME: &'static str = "Gelu-7";

    fn build(a: &AttrReader) -> Result<Self, OpError> {
        Ok(Gelu {
            tanh: a.enum_or("approximation_mode", &["erf", "tanh"], "erf")? == "tanh",
        })
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        if self.tanh {
            rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::ApproxGelu {}, values);
        } else {
            rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Gelu {}, values);
        }
        true
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        if self.tanh {
            let inner = R::c(std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2)
                * (x + R::c(0.044715) * x * x * x);
            R::c(0.5) * x * (R::c(1.0) + inner.tanh())
        } else {
            R::c(0.5) * x * (R::c(1.0) + (x * R::c(std::f64::consts::FRAC_1_SQRT_2)).erf())
        }
    }
}

/// Gelu-2: the erf form; it has no attributes.
pub fn build_v2(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Unary(Gelu { tanh: false })))
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Gelu>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn erf_and_tanh_forms() {
        let erf = Unary(Gelu { tanh: false });
        let out = run(&erf, vec![f64s(&[3], &[0., 1., f64::INFINITY])]).unwrap();
        let want = 0.5 * (1. + libm::erf(std::f64::consts::FRAC_1_SQRT_2));
        assert_eq!(out, f64s(&[3], &[0., want, f64::INFINITY]));
        let tanh = Unary(Gelu { tanh: true });
        let out = run(&tanh, vec![f64s(&[1], &[1.])]).unwrap();
        let want = 0.5 * (1. + ((2. / std::f64::consts::PI).sqrt() * (1. + 0.044715)).tanh());
        assert!((out.values::<f64>().unwrap()[0] - want).abs() < 1e-15);
    }
}
