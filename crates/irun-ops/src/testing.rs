//! Helpers for op unit tests: facts from shape strings, constant axes.

use irun_tensor::{ElementType, PartialShape, Tensor};

use crate::fact::Fact;
use crate::op::{Op, OpError};

/// A fact of type `ty` and partial shape `shape` (OpenVINO syntax: `2,?,1..4`, `...`, ``).
pub fn fact(ty: ElementType, shape: &str) -> Fact {
    Fact::new(ty, PartialShape::parse(shape).expect("test shape"))
}

/// A known scalar i64 (an axis Const).
pub fn scalar_i64(v: i64) -> Fact {
    Fact::of_static(ElementType::I64, &[]).with_value(Tensor::from_i64(vec![], vec![v]).unwrap())
}

/// The single output fact.
pub fn infer1(op: &dyn Op, inputs: &[Fact]) -> Result<Fact, OpError> {
    op.infer(inputs).map(|mut v| v.remove(0))
}

#[track_caller]
pub fn err(r: Result<Fact, OpError>) -> OpError {
    match r {
        Ok(f) => panic!("expected an error, inferred {f}"),
        Err(e) => e,
    }
}
