//! irun: a pure-Rust interpreter and offline validator for OpenVINO IR models.
//!
//! This crate is the `irun` binary plus a thin library that re-exports the workspace crates and
//! holds what the commands print ([`info::ModelInfo`]).

pub mod info;

pub use irun_graph as graph;
pub use irun_ir as ir;
pub use irun_tensor as tensor;

use std::path::Path;

use irun_graph::Graph;
use irun_ir::{Diagnostic, IrModel};

/// Reads a model and builds its graph. `Err` is a fatal reading problem; problems that did not
/// stop reading are in the graph's diagnostics.
pub fn load_graph(xml: &Path, bin: Option<&Path>) -> Result<Graph, Diagnostic> {
    let model = match bin {
        Some(b) => IrModel::open_with_weights(xml, b)?,
        None => IrModel::open(xml)?,
    };
    Ok(Graph::build(model))
}
