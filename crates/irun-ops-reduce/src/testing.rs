//! Helpers for this family's unit tests.

// A prelude for the tests: not every test file uses every helper.
#![allow(unused_imports)]

pub use std::sync::Arc;

pub use crate::testing_kit::prelude::*;

pub use crate::op::{codes, Op};

/// Runs `op` at 1 and 2 threads (which must agree); the single output.
#[track_caller]
pub fn run(op: &dyn Op, inputs: Vec<Tensor>) -> Tensor {
    crate::testing_kit::eval1(op, inputs).expect("runs")
}
