//! Sqrt-1: the square root; `sqrt(-x) = NaN`.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Sqrt;

impl UnaryKind for Sqrt {
    const NAME: &'static str = "Sqrt-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.sqrt()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Sqrt>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn square_root() {
        let out = run(&Unary(Sqrt), vec![f32s(&[2], &[4., -1.])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(v[0], 2.);
        assert!(v[1].is_nan());
        let h = |x: f32| irun_tensor::f16::from_f32(x);
        let out = run(&Unary(Sqrt), vec![f16s(&[1], &[h(2.)])]).unwrap();
        assert_eq!(
            out,
            f16s(&[1], &[h(2f32.sqrt())]),
            "computed in f32, rounded once"
        );
    }
}
