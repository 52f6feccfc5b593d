//! The structural ops every model has: Parameter, Result, Const, Convert, ConvertLike, ShapeOf,
//! and Range (the shape arithmetic torch exports produce).

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par};

pub mod constant;
pub mod convert;
pub mod convert_like;
pub mod parameter;
pub mod range;
pub mod result;
pub mod shape_of;
