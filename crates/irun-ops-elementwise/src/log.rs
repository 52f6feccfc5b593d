//! Log-1: the natural logarithm; `log(0) = -inf`, `log(-x) = NaN`.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct Log;

impl UnaryKind for Log {
    const NAME: &'static str = "Log-1";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.ln()
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Log>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn natural_log() {
        let out = run(&Unary(Log), vec![f32s(&[3], &[1., 0., -1.])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!((v[0], v[1]), (0., f32::NEG_INFINITY));
        assert!(v[2].is_nan());
    }
}
