//! irun-graph: the layer graph of an IR model.
//!
//! Architecture invariant: the graph is built once from an `IrModel` and never changes shape
//! afterwards; node ids are layer indices in XML order, input slots are port positions in
//! `<input>`, and every structural problem (duplicate ids, dangling or doubled edges, cycles,
//! no Result) is a diagnostic with a position, never a panic.

mod graph;
pub mod testing;

pub use graph::{Graph, Node, NodeId, Outlet};

#[cfg(test)]
mod tests;
