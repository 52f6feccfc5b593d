//! Sign-1: -1, 0 or 1 by the sign of `x`; ±0 gives +0 and NaN stays NaN (the reference and
//! CPU); integers too (unsigned: 0 or 1).

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Sign;

impl UnaryKind for Sign {
    const NAME: &'static str = "Sign-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        let zero = R::c(0.0);
        if x > zero {
            R::c(1.0)
        } else if x < zero {
            R::c(-1.0)
        } else if x.is_nan() {
            x
        } else {
            zero
        }
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        let zero = T::default();
        if x > zero {
            T::from_f64(1.0)
        } else if x < zero {
            T::from_f64(-1.0)
        } else {
            zero
        }
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Sign>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn signs_of_floats_and_integers() {
        let out = run(
            &Unary(Sign),
            vec![f32s(&[5], &[-2.5, -0.0, 0.0, 7.0, f32::NAN])],
        )
        .unwrap();
        let got = out.values::<f32>().unwrap();
        assert_eq!(
            got[..4].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            [(-1f32).to_bits(), 0, 0, 1f32.to_bits()]
        );
        assert!(got[4].is_nan());
        let out = run(&Unary(Sign), vec![i32s(&[3], &[i32::MIN, 0, 9])]).unwrap();
        assert_eq!(out, i32s(&[3], &[-1, 0, 1]));
        let out = run(&Unary(Sign), vec![u8s(&[2], &[0, 200])]).unwrap();
        assert_eq!(out, u8s(&[2], &[0, 1]));
    }
}
