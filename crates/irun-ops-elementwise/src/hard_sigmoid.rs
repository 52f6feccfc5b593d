//! HardSigmoid-1: `max(0, min(1, alpha * x + beta))` with `alpha` and `beta` one-element
//! inputs of the data's float type. NaN stays NaN (torch and numpy; the reference's
//! `std::min(1, NaN)` gives 1).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::params::{ParamKind, WithParams};
use crate::unary::{Real, RealExt};

#[derive(Debug, Default)]
pub struct HardSigmoid;

impl ParamKind for HardSigmoid {
    const NAME: &'static str = "HardSigmoid-1";
    const PARAMS: [&'static str; 2] = ["alpha", "beta"];

    #[inline(always)]
    fn real<R: Real>(x: R, alpha: R, beta: R) -> R {
        (alpha * x + beta).min_r(R::c(1.0)).max_r(R::c(0.0))
    }
}

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(WithParams(HardSigmoid)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn clamps_the_line_and_keeps_nan() {
        let op = WithParams(HardSigmoid);
        let x = f32s(&[5], &[-10.0, -1.0, 0.0, 1.0, f32::NAN]);
        let out = run(&op, vec![x, f32s(&[], &[0.2]), f32s(&[1], &[0.5])]).unwrap();
        let got = out.values::<f32>().unwrap();
        assert_eq!(got[..4], [0.0, -0.2f32 + 0.5, 0.5, 0.2f32 + 0.5]);
        assert!(got[4].is_nan());
        let e = op
            .infer(&[fact(F32, "2"), fact(F32, "2"), fact(F32, "")])
            .unwrap_err();
        assert!(
            e.message
                .contains("alpha must hold one value, got shape [2]"),
            "{}",
            e.message
        );
        let e = op
            .infer(&[fact(I32, "2"), fact(I32, ""), fact(I32, "")])
            .unwrap_err();
        assert!(
            e.message.contains("floating-point type, got i32"),
            "{}",
            e.message
        );
    }
}
