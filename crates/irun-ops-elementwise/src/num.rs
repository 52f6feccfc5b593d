//! The arithmetic of every numeric element type, with the rules of docs/semantics.md: integers wrap
//! as OpenVINO's reference does (two's complement), i64/u64 are exact, f16/bf16 compute in f32
//! and round once per operation (as `ov::float16`'s operators do), a float result converted to
//! an integer saturates. Integer division or remainder by zero never reaches these functions:
//! the ops reject a zero divisor first ([`Number::is_zero`]); they return 0 for it all the
//! same, so no input can make them panic.

use std::fmt::Debug;

use half::{bf16, f16};
use irun_tensor::Scalar;

pub trait Number: Scalar + PartialOrd + Debug {
    const IS_FLOAT: bool;
    /// `x` in this type: integers saturate (NaN gives 0), floats round to nearest.
    fn from_f64(x: f64) -> Self;
    fn is_zero(self) -> bool;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    /// Floats: IEEE division. Integers: truncating division.
    fn div(self, b: Self) -> Self;
    /// Floats: IEEE division. Integers: floor division (Python `//`).
    fn floor_div(self, b: Self) -> Self;
    /// The remainder with the dividend's sign (C `%`, `fmod`): Mod-1.
    fn rem_trunc(self, b: Self) -> Self;
    /// The remainder with the divisor's sign, `a - floor(a / b) * b`: FloorMod-1.
    fn rem_floor(self, b: Self) -> Self;
    /// `a^b`: floats as libm `pow`; integers exactly, negative exponents truncating toward 0,
    /// results beyond the type wrapping as every other integer op does (numpy's and torch's
    /// integer power; `0^-n`, which has no integer value, is the type's maximum).
    fn pow(self, b: Self) -> Self;
    /// The larger value; NaN if either is NaN (as torch and numpy do); the first of two equal.
    fn max_nan(self, b: Self) -> Self;
    /// The smaller value; NaN if either is NaN; the first of two equal.
    fn min_nan(self, b: Self) -> Self;
}

macro_rules! int_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const IS_FLOAT: bool = false;
            fn from_f64(x: f64) -> Self { x as $t }
            #[inline(always)]
            fn is_zero(self) -> bool { self == 0 }
            #[inline(always)]
            fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline(always)]
            fn sub(self, b: Self) -> Self { self.wrapping_sub(b) }
            #[inline(always)]
            fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                if b == 0 { 0 } else { self.wrapping_div(b) }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn floor_div(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let q = self.wrapping_div(b);
                if self.wrapping_rem(b) != 0 && ((self < 0) != (b < 0)) { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)]
            fn rem_trunc(self, b: Self) -> Self {
                if b == 0 { 0 } else { self.wrapping_rem(b) }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn rem_floor(self, b: Self) -> Self {
                if b == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) { r.wrapping_add(b) } else { r }
            }
            #[allow(unused_comparisons)]
            fn pow(self, b: Self) -> Self {
                if b < 0 {
                    // |self| >= 2 gives a fraction that truncates to 0; 0^-n is +inf, saturated.
                    return match self as i128 {
                        1 => 1,
                        -1 => if (b as i128) % 2 == 0 { 1 } else { self },
                        0 => <$t>::MAX,
                        _ => 0,
                    };
                }
                // Square and multiply, wrapping: the exact power modulo 2^bits, as numpy's and
                // torch's integer power give it, for any exponent of the type.
                let (mut base, mut e, mut acc) = (self, b as u128, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn max_nan(self, b: Self) -> Self { if b > self { b } else { self } }
            #[inline(always)]
            fn min_nan(self, b: Self) -> Self { if b < self { b } else { self } }
        }
    )*};
}
int_number!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const IS_FLOAT: bool = true;
            fn from_f64(x: f64) -> Self { x as $t }
            #[inline(always)]
            fn is_zero(self) -> bool { self == 0.0 }
            #[inline(always)]
            fn add(self, b: Self) -> Self { self + b }
            #[inline(always)]
            fn sub(self, b: Self) -> Self { self - b }
            #[inline(always)]
            fn mul(self, b: Self) -> Self { self * b }
            #[inline(always)]
            fn div(self, b: Self) -> Self { self / b }
            #[inline(always)]
            fn floor_div(self, b: Self) -> Self { self / b }
            #[inline(always)]
            fn rem_trunc(self, b: Self) -> Self { self % b }
            #[inline(always)]
            fn rem_floor(self, b: Self) -> Self { self - b * (self / b).floor() }
            #[inline(always)]
            fn pow(self, b: Self) -> Self { self.powf(b) }
            #[inline(always)]
            fn max_nan(self, b: Self) -> Self {
                if self.is_nan() { self } else if b.is_nan() || b > self { b } else { self }
            }
            #[inline(always)]
            fn min_nan(self, b: Self) -> Self {
                if self.is_nan() { self } else if b.is_nan() || b < self { b } else { self }
            }
        }
    )*};
}
float_number!(f32, f64);

macro_rules! half_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const IS_FLOAT: bool = true;
            fn from_f64(x: f64) -> Self { <$t>::from_f64(x) }
            #[inline(always)]
            fn is_zero(self) -> bool { self.to_f32() == 0.0 }
            #[inline(always)]
            fn add(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() + b.to_f32()) }
            #[inline(always)]
            fn sub(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() - b.to_f32()) }
            #[inline(always)]
            fn mul(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() * b.to_f32()) }
            #[inline(always)]
            fn div(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() / b.to_f32()) }
            #[inline(always)]
            fn floor_div(self, b: Self) -> Self { self.div(b) }
            #[inline(always)]
            fn rem_trunc(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() % b.to_f32()) }
            #[inline(always)]
            fn rem_floor(self, b: Self) -> Self {
                <$t>::from_f32(self.to_f32().rem_floor(b.to_f32()))
            }
            #[inline(always)]
            fn pow(self, b: Self) -> Self { <$t>::from_f32(self.to_f32().powf(b.to_f32())) }
            #[inline(always)]
            fn max_nan(self, b: Self) -> Self {
                <$t>::from_f32(self.to_f32().max_nan(b.to_f32()))
            }
            #[inline(always)]
            fn min_nan(self, b: Self) -> Self {
                <$t>::from_f32(self.to_f32().min_nan(b.to_f32()))
            }
        }
    )*};
}
half_number!(f16, bf16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_rules_of_the_reference() {
        assert_eq!(250u8.add(10), 4, "wraps");
        assert_eq!(1u8.sub(4), 253);
        assert_eq!(100i8.mul(3), 44);
        assert_eq!((-7i32).floor_div(2), -4);
        assert_eq!(7i32.floor_div(-2), -4);
        assert_eq!((-7i32).div(2), -3);
        assert_eq!(i64::MIN.floor_div(-1), i64::MIN, "wraps, no panic");
        assert_eq!((-7i32).rem_floor(3), 2);
        assert_eq!(7i32.rem_floor(-3), -2);
        assert_eq!((-7i32).rem_floor(-3), -1);
        assert_eq!((-7i32).rem_trunc(3), -1);
        assert_eq!(7i32.rem_trunc(-3), 1);
        assert_eq!(
            5u32.div(0),
            0,
            "zero divisors are rejected before; still no panic"
        );
    }

    #[test]
    fn integer_power_is_exact_and_wraps() {
        assert_eq!(
            Number::pow(13i64, 8),
            815_730_721,
            "exact (OpenVINO CPU gives 815730752)"
        );
        assert_eq!(Number::pow(2i32, -1), 0);
        assert_eq!(Number::pow(-2i32, -1), 0);
        assert_eq!(Number::pow(1i32, -5), 1);
        assert_eq!(Number::pow(-1i32, -3), -1);
        assert_eq!(Number::pow(-1i32, -4), 1);
        assert_eq!(Number::pow(0i32, 0), 1);
        assert_eq!(Number::pow(0i32, -1), i32::MAX);
        // Beyond the type: the exact power modulo 2^bits (numpy: np.int32(3) ** 20).
        assert_eq!(Number::pow(3i32, 20), 3i32.wrapping_pow(20));
        assert_eq!(Number::pow(3i32, 20), -808_182_895);
        assert_eq!(Number::pow(-3i32, 21), (-3i32).wrapping_pow(21));
        assert_eq!(Number::pow(2i32, 31), i32::MIN);
        assert_eq!(Number::pow(2i32, 32), 0);
        assert_eq!(Number::pow(2u8, 200), 0);
        assert_eq!(Number::pow(3u8, 200), 3u8.wrapping_pow(200));
        // Odd numbers have multiplicative order dividing 2^62 modulo 2^64.
        assert_eq!(Number::pow(3i64, 1 << 62), 1);
        assert_eq!(Number::pow(3u8, 200), 161);
        assert_eq!(Number::pow(3i64, 39), 4_052_555_153_018_976_267);
    }

    #[test]
    fn float_rules() {
        assert_eq!((-7.5f32).rem_floor(2.0), 0.5);
        assert_eq!(7.5f32.rem_floor(-2.0), -0.5);
        assert!(1.0f32.rem_floor(0.0).is_nan());
        assert_eq!((-7.5f32).rem_trunc(2.0), -1.5);
        assert!(f32::NAN.max_nan(1.0).is_nan());
        assert!(1.0f32.max_nan(f32::NAN).is_nan());
        assert!(1.0f64.min_nan(f64::NAN).is_nan());
        assert_eq!((-0.0f32).max_nan(0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(
            f16::from_f32(2048.0).add(f16::from_f32(1.0)),
            f16::from_f32(2048.0),
            "f16 rounds each operation"
        );
    }
}
