//! SoftPlus-4: `ln(1 + e^x)`, computed so that large inputs do not overflow (`x` above 20
//! gives `x` in f32, as the reference's threshold does).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug, Default)]
pub struct SoftPlus;

impl UnaryKind for SoftPlus {
    const NAME: &'static str = "SoftPlus-4";

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        if x > R::c(20.0) {
            x
        } else {
            x.exp().ln_1p()
        }
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<SoftPlus>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn soft_plus() {
        let out = run(&Unary(SoftPlus), vec![f32s(&[3], &[0., 100., -100.])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(v[0], 2f32.ln());
        assert_eq!(v[1], 100.);
        assert!(v[2] >= 0. && v[2] < 1e-40);
    }
}
