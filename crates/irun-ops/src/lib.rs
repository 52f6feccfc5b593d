//! irun-ops: the `Op` trait, one file per op (attributes, inference, tests), and the registry.
//!
//! Architecture invariants: an op never sees the graph (it gets input facts, later tensors);
//! `infer` reads tensor values only for the inputs its op lists in `value_inputs`; adding an op
//! touches its own file, one line of `registry::REGISTRY`, and its golden cases.

pub mod attrs;
pub mod core;
mod fact;
pub mod kernel;
pub mod op;
pub mod par;
pub mod registry;
pub mod scatter;
#[cfg(test)]
pub(crate) mod testing;

pub use fact::Fact;
pub use op::{codes, Op, OpError, Prepared, Value};
pub use registry::{resolve, Resolution};
