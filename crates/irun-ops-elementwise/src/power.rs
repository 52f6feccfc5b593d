//! Power-1: `a ^ b`. Floats: libm `pow`. Integers: exact (OpenVINO CPU goes through f32:
//! `13^8` gives 815730752 there), negative exponents truncate toward 0 (`2^-1 = 0`), results
//! beyond the type wrap as all integer arithmetic does (numpy and torch; the reference's
//! double-to-integer cast is undefined there, and CPU's gives INT_MIN).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Power;

impl Arith for Power {
    const NAME: &'static str = "Power-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.pow(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Power>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn integer_and_float_powers() {
        let op = arith(Power);
        let out = run(
            &op,
            vec![i32s(&[4], &[13, 2, -1, 0]), i32s(&[4], &[8, -1, -3, 0])],
        )
        .unwrap();
        assert_eq!(out, i32s(&[4], &[815_730_721, 0, -1, 1]));
        let out = run(
            &op,
            vec![f32s(&[2], &[2., -8.]), f32s(&[2], &[0.5, 1. / 3.])],
        )
        .unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(v[0], 2f32.sqrt());
        assert!(v[1].is_nan(), "negative base, fractional exponent");
    }
}
