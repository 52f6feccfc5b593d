//! Cos-1: the cosine.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Cos;

impl UnaryKind for Cos {
    const NAME: &'static str = "Cos-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.cos()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Cos>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn cosine() {
        let out = run(&Unary(Cos), vec![f32s(&[2], &[0., 1.])]).unwrap();
        assert_eq!(out, f32s(&[2], &[1., 1f32.cos()]));
    }
}
