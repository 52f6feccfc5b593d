//! Maximum-1: the larger of `a` and `b`. NaN propagates from either side (torch and numpy; the
//! reference returns the first operand and OpenVINO CPU the second when one is NaN); of two
//! equal values (`-0`, `+0`) the first. i64 is exact (CPU lowers it to i32).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Maximum;

impl Arith for Maximum {
    const NAME: &'static str = "Maximum-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.max_nan(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Maximum>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn nan_propagates_from_either_side() {
        let op = arith(Maximum);
        let out = run(
            &op,
            vec![
                f32s(&[3], &[f32::NAN, 1., 2.]),
                f32s(&[3], &[1., f32::NAN, 5.]),
            ],
        )
        .unwrap();
        let v = out.values::<f32>().unwrap();
        assert!(v[0].is_nan() && v[1].is_nan());
        assert_eq!(v[2], 5.);
        let big = 1i64 << 40;
        let out = run(&op, vec![i64s(&[1], &[big]), i64s(&[1], &[3])]).unwrap();
        assert_eq!(out, i64s(&[1], &[big]));
    }
}
