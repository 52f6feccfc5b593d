//! irun-opkit: what every op is written with. The [`Op`] trait and its error type, [`Fact`]s,
//! the strict attribute reader, the parallel driver ([`par`]) and the kernel helpers shared by
//! the op families (`irun-ops-core`, `irun-ops-scatter`, ...). The registry that resolves a
//! layer to an op is `irun-ops`, above the families.
//!
//! Architecture invariants: an op never sees the graph (it gets input facts, later tensors);
//! `infer` reads tensor values only for the inputs its op lists in `value_inputs`; parallel
//! work goes through [`par`] only, so rayon is instantiated once, not per kernel and type.

pub mod attrs;
pub mod broadcast;
pub mod epilogue;
pub mod error;
pub mod fact;
pub mod halves;
pub mod kernel;
pub mod number;
pub mod op;
pub mod par;
pub mod quantize;
pub mod simd;
pub mod stream;
pub mod strided;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transpose16;
pub mod two_taps;
pub mod util;

pub use epilogue::{Activation, Epilogue};
pub use fact::Fact;
pub use op::{codes, Op, OpError, Prepared, Value, VariableAccess};
