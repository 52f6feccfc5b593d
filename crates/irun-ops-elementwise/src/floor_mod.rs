//! FloorMod-1: `a - floor(a / b) * b`, the sign of the divisor (`-7 mod 3 = 2`, `7 mod -3 = -2`;
//! f32 `-7.5 mod 2 = 0.5`, `x mod 0.0 = NaN`). An integer zero divisor is a run-time error.

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct FloorMod;

impl Arith for FloorMod {
    const NAME: &'static str = "FloorMod-1";
    const REJECTS_INTEGER_ZERO: bool = true;

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.rem_floor(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<FloorMod>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn sign_of_the_divisor() {
        let op = arith(FloorMod);
        let out = run(
            &op,
            vec![i32s(&[3], &[-7, 7, -7]), i32s(&[3], &[3, -3, -3])],
        )
        .unwrap();
        assert_eq!(out, i32s(&[3], &[2, -2, -1]));
        let out = run(
            &op,
            vec![f32s(&[3], &[-7.5, 7.5, 1.]), f32s(&[3], &[2., -2., 0.])],
        )
        .unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!((v[0], v[1]), (0.5, -0.5));
        assert!(v[2].is_nan());
        let e = run(&op, vec![u8s(&[1], &[3]), u8s(&[1], &[0])]).unwrap_err();
        assert_eq!(e.code, codes::RUN_VALUE);
    }
}
