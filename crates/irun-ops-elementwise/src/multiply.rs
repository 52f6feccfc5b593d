//! Multiply-1: `a * b`, numpy broadcasting; integers wrap (i8 `100 * 3 = 44`).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Multiply;

impl Arith for Multiply {
    const NAME: &'static str = "Multiply-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.mul(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Multiply>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn multiplies_and_wraps() {
        let op = arith(Multiply);
        let out = run(&op, vec![i8s(&[2], &[100, -3]), i8s(&[1], &[3])]).unwrap();
        assert_eq!(out, i8s(&[2], &[44, -9]));
        let out = run(
            &op,
            vec![f32s(&[2, 1], &[2., 3.]), f32s(&[1, 2], &[5., 7.])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[2, 2], &[10., 14., 15., 21.]));
    }
}
