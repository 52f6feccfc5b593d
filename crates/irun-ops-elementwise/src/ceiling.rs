//! Ceiling-1: round toward +inf (`ceil(-0.5) = -0`); the identity on integers.

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Ceiling;

impl UnaryKind for Ceiling {
    const NAME: &'static str = "Ceiling-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.ceil()
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        x
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Ceiling>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn rounds_up() {
        let out = run(&Unary(Ceiling), vec![f32s(&[2], &[-0.5, 2.1])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(v[0].to_bits(), (-0f32).to_bits());
        assert_eq!(v[1], 3.);
    }
}
