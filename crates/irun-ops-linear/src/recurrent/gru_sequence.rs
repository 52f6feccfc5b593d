//! GRUSequence-5: a GRU over `X [batch, steps, input]` from `H [batch, dirs, hidden]` with
//! `lengths [batch]`, `W [dirs, 3*hidden, input]`, `R [dirs, 3*hidden, hidden]` (gates z, r,
//! h) and `B [dirs, 3*hidden]`, or `[dirs, 4*hidden]` with `linear_before_reset` (the
//! candidate's recurrent bias last); outputs `Y [batch, dirs, steps, hidden]` and `Ho`.
//! Attributes: `hidden_size` (required), `direction`, `activations` (sigmoid, tanh), `clip`,
//! `linear_before_reset` (false).

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let kind = Kind::Gru {
        linear_before_reset: a.bool_or("linear_before_reset", false)?,
    };
    Ok(Box::new(Recurrent::read(a, "GRUSequence-5", kind, false)?))
}
