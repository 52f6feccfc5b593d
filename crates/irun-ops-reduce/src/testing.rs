//! Helpers for this family's unit tests.

pub use std::sync::Arc;

pub use irun_tensor::ElementType::*;
pub use irun_tensor::Tensor;

pub use crate::fact::Fact;
pub use crate::op::{codes, Op};
pub use crate::testing_kit::{fact, infer1};

/// A known 1-D i64 value input.
pub fn i64_value(v: &[i64]) -> Fact {
    Fact::of_static(I64, &[v.len()]).with_value(i64s(&[v.len()], v))
}

/// Runs `op` at 1 and 2 threads (which must agree); the single output.
#[track_caller]
pub fn run(op: &dyn Op, inputs: Vec<Tensor>) -> Tensor {
    crate::testing_kit::eval1(op, inputs).expect("runs")
}

macro_rules! makers {
    ($($name:ident: $t:ty => $ctor:ident;)*) => {$(
        #[allow(dead_code)]
        pub fn $name(shape: &[usize], v: &[$t]) -> Tensor {
            Tensor::$ctor(shape.to_vec(), v.to_vec()).expect("test tensor")
        }
    )*};
}

makers! {
    f32s: f32 => from_f32; f64s: f64 => from_f64; i32s: i32 => from_i32; i64s: i64 => from_i64;
    u8s: u8 => from_u8;
}
