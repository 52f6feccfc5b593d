//! Elu-1: `x > 0 ? x : alpha * (e^x - 1)`; `alpha` is required by the spec; omitted,
//! it is 0, as the IR loader reads it.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug)]
pub struct Elu {
    pub alpha: f64,
}

impl UnaryKind for Elu {
    const NAME: &'static str = "Elu-1";

    fn build(a: &AttrReader) -> Result<Self, OpError> {
        Ok(Elu {
            alpha: a.f64_or("alpha", 0.0)?,
        })
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        if x > R::c(0.0) {
            x
        } else {
            R::c(self.alpha) * (x.exp() - R::c(1.0))
        }
    }

    fn f32_slice(&self, values: &mut [f32]) -> bool {
        let op = VectorElu {
            alpha: self.alpha as f32,
        };
        rten_simd::SimdUnaryOp::map_mut(&op, values);
        true
    }
}

/// `real` with rten-vecmath's exponential (a few ULP). Not rten-vecmath's own Elu, which
/// passes x through from `x >= 0`: -0 would come out -0, where OpenVINO's `x > 0` rule (and
/// `real`) give `alpha * (e^-0 - 1)`, +0 for a positive alpha.
struct VectorElu {
    alpha: f32,
}

impl rten_simd::SimdUnaryOp<f32> for VectorElu {
    #[inline(always)]
    fn eval<I: rten_simd::Isa>(&self, isa: I, x: I::F32) -> I::F32 {
        use rten_simd::ops::{BitOps, NumOps};
        let ops = isa.f32();
        let positive = ops.gt(x, ops.zero());
        let e = <rten_vecmath::Exp as rten_simd::SimdUnaryOp<f32>>::apply(isa, x);
        let below = ops.mul(ops.splat(self.alpha), ops.sub(e, ops.splat(1.0)));
        ops.select(x, below, positive)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Elu>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn exponential_linear_unit() {
        let out = run(&Unary(Elu { alpha: 0.5 }), vec![f32s(&[2], &[2., -1.])]).unwrap();
        let want = 0.5 * ((-1f64).exp() - 1.);
        let got = out.values::<f32>().unwrap();
        assert_eq!(got[0], 2.0);
        assert!((f64::from(got[1]) - want).abs() <= 4.0 * f64::from(f32::EPSILON) * want.abs());
    }

    /// The vectorised f32 form: positive values pass through exactly, the rest within a few
    /// ULP of `alpha * (e^x - 1)` (the absolute error of e^x near 0 allowed for); -0 gives
    /// `alpha * 0` as OpenVINO's `x > 0` rule does (+0 for a positive alpha, -0 for a
    /// negative one); NaN stays NaN.
    #[test]
    fn vectorised_f32_follows_the_definition() {
        let xs: Vec<f32> = (-300..=300)
            .map(|i| i as f32 * 0.05)
            .chain([-0.0, 0.0, -100.0, f32::NAN])
            .collect();
        for alpha in [1.0f64, 0.3, -0.7] {
            let out = run(&Unary(Elu { alpha }), vec![f32s(&[xs.len()], &xs)]).unwrap();
            let got = out.values::<f32>().unwrap();
            for (&x, &g) in xs.iter().zip(got) {
                if x.is_nan() {
                    assert!(g.is_nan());
                } else if x > 0.0 {
                    assert_eq!(g, x);
                } else if x == 0.0 {
                    assert_eq!(
                        g.to_bits(),
                        (alpha as f32 * 0.0).to_bits(),
                        "x={x} alpha={alpha}"
                    );
                } else {
                    let want = alpha * (f64::from(x).exp() - 1.0);
                    let tol = 8.0 * f64::from(f32::EPSILON) * want.abs().max(alpha.abs() * 1e-3);
                    assert!(
                        (f64::from(g) - want).abs() <= tol,
                        "x={x} alpha={alpha}: {g} vs {want}"
                    );
                }
            }
        }
    }
}
