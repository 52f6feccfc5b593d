//! Helpers for this family's unit tests.

pub use irun_tensor::ElementType::*;
pub use irun_tensor::Tensor;

pub use crate::fact::Fact;
pub use crate::testing_kit::{fact, infer1};

/// A known rank-0 i64 value input.
pub fn i64_scalar(v: i64) -> Fact {
    Fact::of_static(I64, &[]).with_value(i64s(&[], &[v]))
}

/// Runs `op` at 1 and 2 threads (which must agree); every output.
pub fn run(op: &dyn crate::op::Op, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, crate::op::OpError> {
    crate::testing_kit::eval_all(op, inputs)
}

macro_rules! makers {
    ($($name:ident: $t:ty => $ctor:ident;)*) => {$(
        pub fn $name(shape: &[usize], v: &[$t]) -> Tensor {
            Tensor::$ctor(shape.to_vec(), v.to_vec()).expect("test tensor")
        }
    )*};
}

makers! {
    f32s: f32 => from_f32; i32s: i32 => from_i32; i64s: i64 => from_i64;
}
