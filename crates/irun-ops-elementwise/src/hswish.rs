//! HSwish-4: `x * min(max(x + 3, 0), 6) / 6`.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::RealExt;
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct HSwish;

impl UnaryKind for HSwish {
    const NAME: &'static str = "HSwish-4";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x * (x + R::c(3.0)).max_r(R::c(0.0)).min_r(R::c(6.0)) / R::c(6.0)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<HSwish>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn hard_swish() {
        let out = run(&Unary(HSwish), vec![f32s(&[4], &[-4., -1., 1., 4.])]).unwrap();
        assert_eq!(out, f32s(&[4], &[-0., -2. / 6., 4. / 6., 4.]));
    }
}
