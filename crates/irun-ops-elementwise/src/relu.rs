//! ReLU-1: `max(0, x)`; NaN stays NaN (the reference and torch; OpenVINO CPU gives 0).
//! Integers too.

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Relu;

impl UnaryKind for Relu {
    const NAME: &'static str = "ReLU-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        if x.is_nan() || x > R::c(0.0) {
            x
        } else {
            R::c(0.0)
        }
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        x.max_nan(T::default())
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Relu>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn clamps_below_zero_and_keeps_nan() {
        let out = run(&Unary(Relu), vec![f32s(&[4], &[-1., 0., 2., f32::NAN])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(&v[..3], &[0., 0., 2.]);
        assert!(v[3].is_nan());
        let out = run(&Unary(Relu), vec![i32s(&[2], &[-5, 5])]).unwrap();
        assert_eq!(out, i32s(&[2], &[0, 5]));
    }
}
