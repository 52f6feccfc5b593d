//! Round-5: to the nearest integer, `mode` (required) `half_to_even` or `half_away_from_zero`
//! for the halves. Integers are already whole: unchanged.

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, Unary, UnaryKind};

#[derive(Debug)]
pub struct Round {
    pub half_to_even: bool,
}

impl UnaryKind for Round {
    const NAME: &'static str = "Round-5";
    const INTEGERS: bool = true;

    fn build(a: &AttrReader) -> Result<Self, OpError> {
        let mode = a.enum_or(
            "mode",
            &["half_to_even", "half_away_from_zero"],
            "half_to_even",
        )?;
        Ok(Round {
            half_to_even: mode == "half_to_even",
        })
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        if self.half_to_even {
            x.round_ties_even()
        } else {
            x.round()
        }
    }

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        x
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Round>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn halves_by_mode() {
        let x = || f32s(&[6], &[0.5, 1.5, 2.5, -0.5, -2.5, 2.3]);
        let even = run(&Unary(Round { half_to_even: true }), vec![x()]).unwrap();
        assert_eq!(even, f32s(&[6], &[0., 2., 2., -0., -2., 2.]));
        let away = run(
            &Unary(Round {
                half_to_even: false,
            }),
            vec![x()],
        )
        .unwrap();
        assert_eq!(away, f32s(&[6], &[1., 2., 3., -1., -3., 2.]));
        let ints = run(
            &Unary(Round { half_to_even: true }),
            vec![i32s(&[2], &[7, -3])],
        )
        .unwrap();
        assert_eq!(ints, i32s(&[2], &[7, -3]));
    }
}
