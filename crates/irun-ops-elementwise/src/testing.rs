//! Helpers for this family's unit tests.

// A prelude for the tests: not every test file uses every helper.
#![allow(unused_imports)]

pub use crate::testing_kit::prelude::*;
pub use irun_tensor::f16;

pub use crate::binary::{ArithKind, AutoBroadcast, Binary, BitsKind, CompareKind, LogicKind};
pub use crate::op::{codes, Op, OpError};

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

/// Logic op `K` on the four pairs `(false, false), (false, true), (true, false), (true,
/// true)`, broadcast from [2,1] and [2] to [2,2].
pub fn truth_table<K: crate::binary::Logic>() -> [bool; 4] {
    let a = bools(&[2, 1], &[false, true]);
    let b = bools(&[2], &[false, true]);
    let out = run(&logic::<K>(), vec![a, b]).unwrap();
    assert_eq!(out.shape(), &[2, 2]);
    out.values::<bool>().unwrap().try_into().unwrap()
}
