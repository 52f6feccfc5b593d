//! Abs-1: `|x|`; integers too (`Abs(INT_MIN) = INT_MIN`: it wraps, as the reference does).

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Abs;

impl UnaryKind for Abs {
    const NAME: &'static str = "Abs-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.abs()
    }

    const INTEGERS: bool = true;

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        if x < T::default() {
            T::default().sub(x)
        } else {
            x
        }
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Abs>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn absolute_value() {
        let out = run(&Unary(Abs), vec![i32s(&[3], &[-3, 4, i32::MIN])]).unwrap();
        assert_eq!(out, i32s(&[3], &[3, 4, i32::MIN]));
        let out = run(&Unary(Abs), vec![f32s(&[2], &[-0., -2.5])]).unwrap();
        assert_eq!(out, f32s(&[2], &[0., 2.5]));
    }
}
