//! The elementwise family: binary arithmetic (Add, Subtract, Multiply, Divide, Maximum,
//! Minimum, Power, FloorMod, Mod, SquaredDifference), comparisons (Equal, NotEqual, Greater,
//! GreaterEqual, Less, LessEqual), logical ops (LogicalAnd/Or/Xor/Not), Select, and unary math
//! and activations, bitwise ops, PReLU. One file per op, named after it (`Mod` is `modulo.rs`); `binary.rs` and
//! `unary.rs` hold what the ops of each arity share (attributes, inference, broadcasting
//! kernels that write into an input's buffer when they may), `num.rs` the arithmetic of each
//! element type.
//!
//! Architecture invariant: numpy broadcasting is `irun_opkit::broadcast`, used by every op here;
//! element-type dispatch is irun-tensor's `with_*!` macros; parallel work goes through
//! `irun_opkit::par`.

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing as testing_kit;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, broadcast, fact, kernel, op, par};

pub mod binary;
pub mod float_class;
pub mod num;
pub mod params;
#[cfg(test)]
mod testing;
pub mod unary;

pub mod abs;
pub mod acos;
pub mod acosh;
pub mod add;
pub mod asin;
pub mod asinh;
pub mod atan;
pub mod atanh;
pub mod bitwise_and;
pub mod bitwise_not;
pub mod bitwise_or;
pub mod bitwise_shift;
pub mod bitwise_xor;
pub mod ceiling;
pub mod clamp;
pub mod cos;
pub mod cosh;
pub mod divide;
pub mod elu;
pub mod equal;
pub mod erf;
pub mod exp;
pub mod fake_quantize;
pub mod floor;
pub mod floor_mod;
pub mod gelu;
pub mod greater;
pub mod greater_equal;
pub mod hard_sigmoid;
pub mod hsigmoid;
pub mod hswish;
pub mod is_finite;
pub mod is_inf;
pub mod is_nan;
pub mod less;
pub mod less_equal;
pub mod log;
pub mod logical_and;
pub mod logical_not;
pub mod logical_or;
pub mod logical_xor;
pub mod maximum;
pub mod minimum;
pub mod mish;
pub mod modulo;
pub mod multiply;
pub mod negative;
pub mod not_equal;
pub mod power;
pub mod prelu;
pub mod relu;
pub mod round;
pub mod select;
pub mod selu;
pub mod sigmoid;
pub mod sign;
pub mod sin;
pub mod sinh;
pub mod soft_sign;
pub mod softplus;
pub mod sqrt;
pub mod squared_difference;
pub mod subtract;
pub mod swish;
pub mod tan;
pub mod tanh;
