//! Minimum-1: the smaller of `a` and `b`; NaN propagates from either side, as in Maximum-1.

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Minimum;

impl Arith for Minimum {
    const NAME: &'static str = "Minimum-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.min_nan(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Minimum>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn smaller_value_and_nan() {
        let op = arith(Minimum);
        let out = run(&op, vec![i64s(&[2], &[1 << 40, -5]), i64s(&[], &[3])]).unwrap();
        assert_eq!(
            out,
            i64s(&[2], &[3, -5]),
            "CPU gives 0 for 2^40: it lowers i64 to i32"
        );
        let out = run(
            &op,
            vec![f64s(&[2], &[1., 2.]), f64s(&[2], &[f64::NAN, 0.5])],
        )
        .unwrap();
        let v = out.values::<f64>().unwrap();
        assert!(v[0].is_nan());
        assert_eq!(v[1], 0.5);
    }
}
