//! irun-ops: the op registry over every op family, and the kit every op is written with
//! (re-exported from `irun-opkit`, so the graph and executor need only this crate).
//!
//! Architecture invariants: an op never sees the graph (it gets input facts, later tensors);
//! `infer` reads tensor values only for the inputs its op lists in `value_inputs`; adding an op
//! touches its own file (in its family's crate), one line of `registry::REGISTRY`, and its
//! golden cases.

#![forbid(unsafe_code)]

pub mod known;
pub mod registry;

pub use irun_opkit::{
    attrs, epilogue, fact, kernel, op, par, quantize, Activation, Epilogue, Fact,
};
pub use irun_opkit::{codes, Op, OpError, Prepared, Value, VariableAccess};
pub use irun_ops_core as core;
pub use irun_ops_elementwise as elementwise;
pub use irun_ops_index as index;
pub use irun_ops_linear as linear;
pub use irun_ops_movement as movement;
pub use irun_ops_reduce as reduce;
pub use irun_ops_scatter as scatter;
pub use irun_ops_signal as signal;
pub use registry::{resolve, Resolution};
