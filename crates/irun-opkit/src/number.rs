//! Every numeric element type as f64 and back, for kernels that compute in f64 whatever
//! the data's type (Interpolate, and ops like it): one instantiation per type, no
//! per-type code in the op.

use half::{bf16, f16};
use irun_tensor::{with_number, Scalar, Tensor};

pub trait Number: Scalar {
    /// Whether the type is an integer (results are rounded before `from_f64`).
    const IS_INTEGER: bool;
    fn to_f64(self) -> f64;
    /// The nearest value of the type: floats round to nearest, integers truncate toward 0
    /// and saturate (NaN gives 0), as Rust's `as` does.
    fn from_f64(x: f64) -> Self;
}

macro_rules! number {
    ($int:expr => $($t:ty),*) => {$(
        impl Number for $t {
            const IS_INTEGER: bool = $int;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    )*};
}
number!(true => i8, i16, i32, i64, u8, u16, u32, u64);
number!(false => f32, f64);

macro_rules! half_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const IS_INTEGER: bool = false;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                <$t>::from_f64(x)
            }
        }
    )*};
}
half_number!(f16, bf16);

/// Every value of a numeric tensor as f64 (integers beyond 2^53 rounded); `None` for
/// booleans and strings.
pub fn f64_values(t: &Tensor) -> Option<Vec<f64>> {
    with_number!(t.element_type(), T => Some(t.values::<T>()?.iter().map(|x| x.to_f64()).collect()), else None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_saturates() {
        assert_eq!(<u8 as Number>::from_f64(300.0), 255);
        assert_eq!(<i8 as Number>::from_f64(-2.9), -2);
        assert_eq!(<i32 as Number>::from_f64(f64::NAN), 0);
        assert_eq!(
            <f16 as Number>::from_f64(1.0 / 3.0),
            f16::from_f64(1.0 / 3.0)
        );
        assert_eq!(Number::to_f64(bf16::from_f32(2.5)), 2.5);
    }
}
