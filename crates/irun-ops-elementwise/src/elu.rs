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
        assert_eq!(out, f32s(&[2], &[2., 0.5 * ((-1f32).exp() - 1.)]));
    }
}
