//! Helpers for this family's unit tests.

// A prelude for the tests: not every test file uses every helper.
#![allow(unused_imports)]

pub use irun_tensor::ElementType::*;
pub use irun_tensor::Tensor;

pub use crate::fact::Fact;
pub use crate::testing_kit::scalar_i64 as i64_scalar;
pub use crate::testing_kit::{
    bools, f16s, f32s, f64s, fact, i32s, i64_value, i64s, i8s, infer1, u32s, u64s, u8s,
};

/// Runs `op` at 1 and 2 threads (which must agree); every output.
pub fn run(op: &dyn crate::op::Op, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, crate::op::OpError> {
    crate::testing_kit::eval_all(op, inputs)
}
