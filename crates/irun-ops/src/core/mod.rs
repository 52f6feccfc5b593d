//! The structural ops every model has: Parameter, Result, Const, Convert, ShapeOf.

pub mod constant;
pub mod convert;
pub mod parameter;
pub mod result;
pub mod shape_of;
