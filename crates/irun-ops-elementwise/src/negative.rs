//! Negative-1: `-x`; integers wrap (`-INT_MIN = INT_MIN`).

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Negative;

impl UnaryKind for Negative {
    const NAME: &'static str = "Negative-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        -x
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        T::default().sub(x)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Negative>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn negation() {
        let out = run(&Unary(Negative), vec![i8s(&[3], &[1, -128, 0])]).unwrap();
        assert_eq!(out, i8s(&[3], &[-1, -128, 0]));
        let out = run(&Unary(Negative), vec![f32s(&[1], &[0.])]).unwrap();
        assert_eq!(out.values::<f32>().unwrap()[0].to_bits(), (-0f32).to_bits());
    }
}
