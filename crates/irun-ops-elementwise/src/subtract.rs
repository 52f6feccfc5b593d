//! Subtract-1: `a - b`, numpy broadcasting; integers wrap (u8 `1 - 4 = 253`).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Subtract;

impl Arith for Subtract {
    const NAME: &'static str = "Subtract-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.sub(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Subtract>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn subtracts_and_wraps() {
        let op = arith(Subtract);
        let out = run(&op, vec![u8s(&[2], &[1, 9]), u8s(&[2], &[4, 4])]).unwrap();
        assert_eq!(out, u8s(&[2], &[253, 5]));
        let out = run(&op, vec![f32s(&[], &[1.5]), f32s(&[2], &[0.5, 2.0])]).unwrap();
        assert_eq!(out, f32s(&[2], &[1.0, -0.5]));
    }
}
