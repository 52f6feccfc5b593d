//! Floor-1: round toward -inf; the identity on integers.

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Floor;

impl UnaryKind for Floor {
    const NAME: &'static str = "Floor-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.floor()
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        x
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Floor>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn rounds_down() {
        let out = run(&Unary(Floor), vec![f32s(&[3], &[-0.5, 2.7, -2.])]).unwrap();
        assert_eq!(out, f32s(&[3], &[-1., 2., -2.]));
        let out = run(&Unary(Floor), vec![i64s(&[1], &[7])]).unwrap();
        assert_eq!(out, i64s(&[1], &[7]));
    }
}
