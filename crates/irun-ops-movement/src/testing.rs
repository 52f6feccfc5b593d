//! Helpers for this family's unit tests.

// A prelude for the tests: not every test file uses every helper.
#![allow(unused_imports)]

pub use crate::testing_kit::prelude::*;

/// Runs `op` at 1 and 2 threads (which must agree); every output.
pub fn run(op: &dyn crate::op::Op, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, crate::op::OpError> {
    crate::testing_kit::eval_all(op, inputs)
}
