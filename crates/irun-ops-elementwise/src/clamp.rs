//! Clamp-1: `min(max(x, min), max)`. `min` and `max` are required by the spec; omitted, each is
//! 0, as the IR loader reads them; `min > max` is invalid. Integers clamp to `[ceil(min),
//! floor(max)]`, saturated to the type (u8 with `[-5, 300]` changes nothing). NaN stays NaN
//! (the reference and torch; OpenVINO CPU returns `min`).

use crate::attrs::AttrReader;
use crate::num::Number;
use crate::op::{Op, OpError};
use crate::unary::{Real, RealExt, Unary, UnaryKind};

#[derive(Debug)]
pub struct Clamp {
    pub min: f64,
    pub max: f64,
}

impl UnaryKind for Clamp {
    const NAME: &'static str = "Clamp-1";
    const INTEGERS: bool = true;

    fn build(a: &AttrReader) -> Result<Self, OpError> {
        let (min, max) = (a.f64_or("min", 0.0)?, a.f64_or("max", 0.0)?);
        if min > max || min.is_nan() || max.is_nan() {
            return Err(OpError::attribute(
                "min",
                format!("Clamp requires min <= max, got min={min} and max={max}"),
            ));
        }
        Ok(Clamp { min, max })
    }

    #[inline(always)]
    fn real<R: Real>(&self, x: R) -> R {
        x.max_r(R::c(self.min)).min_r(R::c(self.max))
    }

    #[inline(always)]
    fn int<T: Number>(&self, x: T) -> T {
        let (lo, hi) = (T::from_f64(self.min.ceil()), T::from_f64(self.max.floor()));
        if x < lo {
            lo
        } else if x > hi {
            hi
        } else {
            x
        }
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Unary::<Clamp>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn floats_clamp_and_keep_nan() {
        let op = Unary(Clamp {
            min: -1.0,
            max: 2.0,
        });
        let out = run(&op, vec![f32s(&[4], &[-5., 0.5, 9., f32::NAN])]).unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(&v[..3], &[-1., 0.5, 2.]);
        assert!(v[3].is_nan());
    }

    #[test]
    fn integer_bounds_round_inward_and_saturate() {
        let op = Unary(Clamp {
            min: -2.5,
            max: 3.5,
        });
        let out = run(&op, vec![i32s(&[4], &[-9, -2, 3, 9])]).unwrap();
        assert_eq!(out, i32s(&[4], &[-2, -2, 3, 3]));
        let op = Unary(Clamp {
            min: -5.0,
            max: 300.0,
        });
        let out = run(&op, vec![u8s(&[3], &[0, 17, 255])]).unwrap();
        assert_eq!(out, u8s(&[3], &[0, 17, 255]));
    }
}
