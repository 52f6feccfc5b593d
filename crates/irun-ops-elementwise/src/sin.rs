//! Sin-1: the sine.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Sin;

impl UnaryKind for Sin {
    const NAME: &'static str = "Sin-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.sin()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Sin>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn sine() {
        let out = run(&Unary(Sin), vec![f32s(&[2], &[0., 1.])]).unwrap();
        assert_eq!(out, f32s(&[2], &[0., 1f32.sin()]));
    }
}
