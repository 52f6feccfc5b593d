//! irun-graph: the layer graph of an IR model.
//!
//! Architecture invariant: the graph is built once from an `IrModel` and never changes shape
//! afterwards; node ids are layer indices in XML order, input slots are port positions in
//! `<input>`, and every structural problem (duplicate ids, dangling or doubled edges, cycles,
//! no Result) is a diagnostic with a position, never a panic. Inference runs once, forward over
//! `order`; an op reads values only of its declared value inputs, which the pass folds from
//! small Consts and from ShapeOf of static shapes. A state variable has at most one ReadValue
//! and one Assign (`Graph::variables`).

#![forbid(unsafe_code)]

pub mod control_flow;
mod graph;
mod infer;
pub mod info;
pub mod testing;
mod variables;

pub use control_flow::{ControlFlow, FlowKind};
pub use graph::{Graph, Node, NodeId, Outlet};
pub use info::ModelInfo;
pub use variables::Variable;

use std::path::Path;

use irun_ir::{Diagnostic, IrModel, Weights};

/// Reads a model (`bin`: its weights file, by default the `.xml` path with the extension
/// `.bin`) and builds its graph. `Err` is a fatal reading problem; problems that did not stop
/// reading are in the graph's diagnostics.
pub fn load(xml: &Path, bin: Option<&Path>) -> Result<Graph, Diagnostic> {
    let model = match bin {
        Some(b) => IrModel::open_with_weights(xml, b)?,
        None => IrModel::open(xml)?,
    };
    Ok(Graph::build(model))
}

/// As [`load`], for a model held in memory: the `.xml` text and its weights. Diagnostics name
/// the file `model.xml`.
pub fn from_bytes(xml: &[u8], weights: Weights) -> Result<Graph, Diagnostic> {
    let path = Path::new("model.xml");
    let text = irun_ir::xml_text(xml.to_vec(), path)?;
    Ok(Graph::build(IrModel::parse(&text, path, weights)?))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_control_flow;
