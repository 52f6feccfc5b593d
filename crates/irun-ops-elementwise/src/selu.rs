//! Selu-1: `lambda * x` for `x > 0`, else `lambda * alpha * (e^x - 1)`, with `alpha` and
//! `lambda` one-element inputs of the data's float type.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::params::{ParamKind, WithParams};
use crate::unary::Real;

#[derive(Debug, Default)]
pub struct Selu;

impl ParamKind for Selu {
    const NAME: &'static str = "Selu-1";
    const PARAMS: [&'static str; 2] = ["alpha", "lambda"];

    #[inline(always)]
    fn real<R: Real>(x: R, alpha: R, lambda: R) -> R {
        if x > R::c(0.0) {
            lambda * x
        } else {
            alpha * lambda * (x.exp() - R::c(1.0))
        }
    }
}

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(WithParams(Selu)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn scaled_exponential_below_zero() {
        let op = WithParams(Selu);
        let x = f64s(&[3], &[2.0, 0.0, -1.0]);
        let out = run(&op, vec![x, f64s(&[1], &[1.5]), f64s(&[], &[2.0])]).unwrap();
        let want = [4.0, 0.0, 1.5 * 2.0 * ((-1f64).exp() - 1.0)];
        assert_eq!(out.values::<f64>().unwrap(), want);
    }
}
