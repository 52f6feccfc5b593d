//! SquaredDifference-1: `(a - b)^2`; integers wrap (u8 `(1 - 4)^2 = 253^2 mod 256 = 9`, the
//! reference's rule; OpenVINO CPU returns 0 there).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct SquaredDifference;

impl Arith for SquaredDifference {
    const NAME: &'static str = "SquaredDifference-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        let d = a.sub(b);
        d.mul(d)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<SquaredDifference>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn squares_the_difference() {
        let op = arith(SquaredDifference);
        let out = run(&op, vec![f32s(&[2], &[1., 5.]), f32s(&[2], &[4., 2.])]).unwrap();
        assert_eq!(out, f32s(&[2], &[9., 9.]));
        let out = run(&op, vec![u8s(&[1], &[1]), u8s(&[1], &[4])]).unwrap();
        assert_eq!(out, u8s(&[1], &[9]));
    }
}
