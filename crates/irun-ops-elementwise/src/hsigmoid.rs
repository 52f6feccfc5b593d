//! HSigmoid-5: `min(max(x + 3, 0), 6) / 6` (exactly 1 at saturation; OpenVINO CPU gives
//! 0.9999999, multiplying by 1/6).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::RealExt;
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct HSigmoid;

impl UnaryKind for HSigmoid {
    const NAME: &'static str = "HSigmoid-5";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        (x + R::c(3.0)).max_r(R::c(0.0)).min_r(R::c(6.0)) / R::c(6.0)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<HSigmoid>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn hard_sigmoid() {
        let out = run(&Unary(HSigmoid), vec![f32s(&[3], &[-4., 0., 10.])]).unwrap();
        assert_eq!(out, f32s(&[3], &[0., 0.5, 1.]));
    }
}
