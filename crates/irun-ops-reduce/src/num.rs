//! Element types as the reductions see them: floats accumulate in f64 (more exact than
//! OpenVINO's Kahan-summed f32, and order-fixed), integers in their own type with wrapping.

use half::{bf16, f16};
use irun_tensor::Scalar;

pub trait Float: Scalar {
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

macro_rules! float {
    ($t:ty, $to:expr, $from:expr) => {
        impl Float for $t {
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self)
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                $from(x)
            }
        }
    };
}
float!(f32, |x: f32| x as f64, |x: f64| x as f32);
float!(f64, |x: f64| x, |x: f64| x);
float!(f16, |x: f16| x.to_f64(), f16::from_f64);
float!(bf16, |x: bf16| x.to_f64(), bf16::from_f64);

pub trait Int: Scalar + Ord {
    const MIN: Self;
    const MAX: Self;
    const ZERO: Self;
    const ONE: Self;
    fn add(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn abs(self) -> Self;
    /// Division by a count, truncating toward 0 (the reference's integer mean).
    fn div_count(self, n: usize) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline(always)]
            fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn abs(self) -> Self { if self < 0 { (0 as $t).wrapping_sub(self) } else { self } }
            #[inline(always)]
            fn div_count(self, n: usize) -> Self {
                // A count beyond the type divides everything to 0 (|sum| < count).
                match <$t>::try_from(n) {
                    Ok(0) | Err(_) => if n == 0 { 0 } else { (self as i128 / n as i128) as $t },
                    Ok(d) => self.wrapping_div(d),
                }
            }
        }
    )*};
}
int!(i8, i16, i32, i64, u8, u16, u32, u64);
