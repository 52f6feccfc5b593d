//! Helpers for this family's unit tests.

pub use irun_tensor::ElementType::*;
pub use irun_tensor::{f16, Tensor};

pub use crate::binary::{ArithKind, AutoBroadcast, Binary, BitsKind, CompareKind, LogicKind};
pub use crate::fact::Fact;
pub use crate::op::{codes, Op, OpError};
pub use crate::testing_kit::{fact, infer1};

/// Runs `op` at 1 and 2 threads (which must agree) on `inputs`.
pub fn run(op: &dyn Op, inputs: Vec<Tensor>) -> Result<Tensor, OpError> {
    crate::testing_kit::eval1(op, inputs)
}

/// The inference error of `op` on `inputs`.
#[track_caller]
pub fn infer_err(op: &dyn Op, inputs: &[Fact]) -> OpError {
    match op.infer(inputs) {
        Ok(f) => panic!("expected an error, inferred {f:?}"),
        Err(e) => e,
    }
}

pub fn arith<K: crate::binary::Arith>(k: K) -> Binary<ArithKind<K>> {
    Binary {
        kind: ArithKind(k),
        broadcast: AutoBroadcast::Numpy,
    }
}

pub fn compare<K: crate::binary::Compare>() -> Binary<CompareKind<K>> {
    Binary {
        kind: CompareKind::default(),
        broadcast: AutoBroadcast::Numpy,
    }
}

pub fn bitwise<K: crate::binary::Bits>() -> Binary<BitsKind<K>> {
    Binary {
        kind: BitsKind::default(),
        broadcast: AutoBroadcast::Numpy,
    }
}

pub fn logic<K: crate::binary::Logic>() -> Binary<LogicKind<K>> {
    Binary {
        kind: LogicKind::default(),
        broadcast: AutoBroadcast::Numpy,
    }
}

macro_rules! makers {
    ($($name:ident: $t:ty => $ctor:ident;)*) => {$(
        pub fn $name(shape: &[usize], v: &[$t]) -> Tensor {
            Tensor::$ctor(shape.to_vec(), v.to_vec()).expect("test tensor")
        }
    )*};
}

makers! {
    f32s: f32 => from_f32; f64s: f64 => from_f64; f16s: f16 => from_f16;
    i8s: i8 => from_i8; i32s: i32 => from_i32; i64s: i64 => from_i64;
    u8s: u8 => from_u8; u32s: u32 => from_u32; u64s: u64 => from_u64;
    bools: bool => from_bool;
}
