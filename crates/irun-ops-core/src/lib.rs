//! The structural ops every model has: Parameter, Result, Const, Convert, ConvertLike, ShapeOf,
//! Range (the shape arithmetic torch exports produce), and the state ops ReadValue and Assign.

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, util};

pub mod assign;
pub mod constant;
pub mod convert;
pub mod convert_like;
pub mod eye;
pub mod parameter;
pub mod random_uniform;
pub mod range;
pub mod read_value;
pub mod result;
pub mod shape_of;
