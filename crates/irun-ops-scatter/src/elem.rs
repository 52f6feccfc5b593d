//! The element types the scatter reductions compute in ([`Elem`]), below the reductions'
//! dispatch (`reduce.rs`) and the updates' readers (`updates.rs`), which both use it.

use half::{bf16, f16};
use irun_tensor::Scalar;

/// An element type the reductions compute in.
pub trait Elem: Scalar + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    /// `numeric_limits::lowest()`: the neutral value of max (−FLT_MAX for f32, not −inf).
    const LOWEST: Self;
    /// `numeric_limits::max()`: the neutral value of min.
    const HIGHEST: Self;
    /// Whether every combine is associative and commutative on this type (wrapping integer
    /// arithmetic, min and max, booleans; not floats), so that a fold may be regrouped, as a
    /// vector reduction does, without changing a bit.
    const EXACT: bool;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    /// The mean of an accumulated sum over `n` (> 0) values: division for floats, floor for
    /// integers (computed exactly, not through f64).
    fn div_count(self, n: u64) -> Self;
    /// `v` as this type, for updates stored narrower than the computation
    /// ([`crate::updates::Widening`]: f16 and bf16 for f32, where it is the identity).
    fn from_f32(v: f32) -> Self;
}

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            const EXACT: bool = false;
            #[inline] fn add(self, b: Self) -> Self { self + b }
            #[inline] fn sub(self, b: Self) -> Self { self - b }
            #[inline] fn mul(self, b: Self) -> Self { self * b }
            #[inline] fn div_count(self, n: u64) -> Self { self / n as $t }
            #[inline] fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}
float_elem!(f32, f64);

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            const EXACT: bool = true;
            #[inline] fn add(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline] fn sub(self, b: Self) -> Self { self.wrapping_sub(b) }
            #[inline] fn mul(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline] fn div_count(self, n: u64) -> Self {
                // Floor division; |result| <= |self|, so the cast back is exact.
                (self as i128).div_euclid(n as i128) as $t
            }
            #[inline] fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Booleans: sum is OR, sub is XOR, prod is AND; with false < true, max is OR and min is AND.
impl Elem for bool {
    const ZERO: Self = false;
    const ONE: Self = true;
    const LOWEST: Self = false;
    const HIGHEST: Self = true;
    const EXACT: bool = true;
    #[inline]
    fn add(self, b: Self) -> Self {
        self | b
    }
    #[inline]
    fn sub(self, b: Self) -> Self {
        self ^ b
    }
    #[inline]
    fn mul(self, b: Self) -> Self {
        self & b
    }
    /// Unreachable: validation rejects mean on boolean data. The identity keeps it total.
    fn div_count(self, _n: u64) -> Self {
        self
    }
    #[inline]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
}

/// f16/bf16 as elements of their own. `dispatch` uses them only to move values
/// (`reduction="none"`); reductions run in f32 and round once. The arithmetic here rounds after
/// every step, which is right for a single operation and is what a caller would expect.
macro_rules! half_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            const EXACT: bool = false;
            fn add(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() + b.to_f32()) }
            fn sub(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() - b.to_f32()) }
            fn mul(self, b: Self) -> Self { <$t>::from_f32(self.to_f32() * b.to_f32()) }
            fn div_count(self, n: u64) -> Self { <$t>::from_f32(self.to_f32() / n as f32) }
            fn from_f32(v: f32) -> Self { <$t>::from_f32(v) }
        }
    )*};
}
half_elem!(f16, bf16);
