//! What many ops share: reading integer value inputs (axes, shapes), normalising axes, and
//! building outputs from words.

use std::sync::Arc;

use irun_tensor::{fmt_shape, Dim, ElementType, PartialShape, Tensor, WordVec};

use crate::fact::Fact;
use crate::op::{codes, OpError, Value};

/// The values of an integer value input at inference time, when known.
pub fn known_ints(f: &Fact) -> Option<Vec<i64>> {
    f.value.as_ref()?.to_i64_vec()
}

/// The values of integer input `slot` at run time.
pub fn ints(t: &Tensor, slot: usize) -> Result<Vec<i64>, OpError> {
    if !t.element_type().is_integral_number() {
        return Err(OpError::input(
            slot,
            codes::ELEMENT_TYPE,
            format!(
                "input {slot} must be an integer tensor, got {}",
                t.element_type()
            ),
        ));
    }
    t.to_i64_vec().ok_or_else(|| {
        OpError::input(
            slot,
            codes::BAD_VALUE,
            format!("input {slot} holds a value beyond i64"),
        )
    })
}

/// Checks at inference time that input `slot` has an integer element type.
pub fn expect_int_type(inputs: &[Fact], slot: usize, op: &str) -> Result<(), OpError> {
    let ty = inputs[slot].ty;
    if ty == ElementType::Dynamic || ty.is_integral_number() {
        return Ok(());
    }
    Err(OpError::input(
        slot,
        codes::ELEMENT_TYPE,
        format!("{op}: input {slot} must have an integer element type, got {ty}"),
    ))
}

/// `axis` in `[-rank, rank-1]`, normalised to `0..rank`; else an error on input `slot` (or on
/// the attribute, when `slot` is `None`).
pub fn norm_axis(axis: i64, rank: usize, slot: Option<usize>, op: &str) -> Result<usize, OpError> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        let msg = format!("{op}: axis {axis} is out of the range [{}, {}]", -r, r - 1);
        return Err(match slot {
            Some(s) => OpError::input(s, codes::AXIS, msg),
            None => OpError::attribute("axis", msg).with_code(codes::AXIS),
        });
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// A tensor of `ty` and `shape` from words, as an op output.
pub fn output(ty: ElementType, shape: Vec<usize>, words: WordVec) -> Result<Value, OpError> {
    Tensor::from_words(ty, shape, words)
        .map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// The error for a string tensor reaching a copy kernel.
pub fn no_strings(op: &str) -> OpError {
    OpError::new(
        codes::UNSUPPORTED_TYPE,
        format!("{op} on string tensors is not implemented"),
    )
}

/// A static dim as a `Dim`.
pub fn fixed(n: usize) -> Dim {
    Dim::fixed(n as u64)
}

/// The partial shape of static dims.
pub fn shape_of(dims: &[usize]) -> PartialShape {
    PartialShape::fixed(dims)
}

pub fn shape_text(dims: &[usize]) -> String {
    fmt_shape(dims)
}
