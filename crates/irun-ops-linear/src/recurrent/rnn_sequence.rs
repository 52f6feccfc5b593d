//! RNNSequence-5: `h = f(x W^T + h R^T + B)` over `X [batch, steps, input]` from
//! `H [batch, dirs, hidden]` with `lengths [batch]`, `W [dirs, hidden, input]`,
//! `R [dirs, hidden, hidden]`, `B [dirs, hidden]`; outputs `Y [batch, dirs, steps, hidden]`
//! and `Ho`. Attributes: `hidden_size` (required), `direction`, `activations` (tanh), `clip`.

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Recurrent::read(
        a,
        "RNNSequence-5",
        Kind::Rnn,
        false,
    )?))
}
