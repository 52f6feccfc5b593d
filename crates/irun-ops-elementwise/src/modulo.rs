//! Mod-1: the truncated remainder (C `%`, `fmod`), the sign of the dividend (`-7 mod 3 = -1`,
//! `7 mod -3 = 1`, f32 `-7.5 mod 2 = -1.5`). An integer zero divisor is a run-time error (the
//! reference dies with SIGFPE).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Mod;

impl Arith for Mod {
    const NAME: &'static str = "Mod-1";
    const REJECTS_INTEGER_ZERO: bool = true;

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.rem_trunc(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Mod>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn sign_of_the_dividend() {
        let op = arith(Mod);
        let out = run(
            &op,
            vec![i32s(&[3], &[-7, 7, i32::MIN]), i32s(&[3], &[3, -3, -1])],
        )
        .unwrap();
        assert_eq!(out, i32s(&[3], &[-1, 1, 0]));
        let out = run(&op, vec![f32s(&[1], &[-7.5]), f32s(&[1], &[2.])]).unwrap();
        assert_eq!(out, f32s(&[1], &[-1.5]));
        let e = run(&op, vec![i32s(&[1], &[3]), i32s(&[1], &[0])]).unwrap_err();
        assert_eq!(
            e.message,
            "integer division by zero: input 1 is 0 at position [0]"
        );
    }
}
