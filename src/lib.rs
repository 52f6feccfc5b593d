//! irun: a pure-Rust interpreter and offline validator for OpenVINO IR models.
//!
//! The library API is three steps: [`Model::open`] reads and validates `model.xml` and its
//! `model.bin` (memory-mapped), [`Model::compile`] plans it for a number of threads and a
//! memory limit, and [`Executable::run`] maps named input tensors to named output tensors.
//!
//! ```
//! use irun::{Model, Options, Tensor};
//!
//! let model = Model::open("models/scatter/seu12_mean_floor_negative/model.xml")?;
//! let exe = model.compile(&Options { threads: Some(2), ..Options::default() })?;
//! let outputs = exe.run(vec![
//!     ("data".to_string(), Tensor::from_i32(vec![4], vec![0, 0, 0, 10])?),
//!     ("indices".to_string(), Tensor::from_i64(vec![7], vec![0, 0, 1, 1, 2, 2, 2])?),
//!     ("updates".to_string(), Tensor::from_i32(vec![7], vec![-1, -2, 1, 2, -5, -5, -6])?),
//! ])?;
//! assert_eq!(outputs[0].0, "out");
//! assert_eq!(outputs[0].1.values::<i32>().unwrap(), &[-2, 1, -6, 10]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A runnable version is `examples/scatter.rs` (`cargo run --release --example scatter`).
//!
//! The crate also holds the `irun` binary (`src/cli/`) and what `irun info` prints
//! ([`info::ModelInfo`]); it re-exports the workspace crates as [`tensor`], [`ir`], [`graph`],
//! [`ops`] and [`exec`].

#[doc(hidden)]
pub mod fuzzing;
pub mod info;

pub use irun_exec as exec;
pub use irun_graph as graph;
pub use irun_ir as ir;
pub use irun_ops as ops;
pub use irun_tensor as tensor;

pub use irun_exec::{
    Executable, InputInfo, Options, OutputInfo, RunError, RunErrorKind, State, VariableInfo,
};
pub use irun_tensor::{ElementType, Tensor};

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

/// Why a model could not be opened or compiled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read or is not an IR file (the diagnostic says which).
    #[error("{}: {}", .0.code, .0.message)]
    Unreadable(Box<Diagnostic>),
    /// The model has errors; every error diagnostic is here (as `irun check` prints them).
    #[error("the model is invalid: {} error(s), first: {}", .0.len(), .0.first().map_or("", |d| d.message.as_str()))]
    Invalid(Vec<Diagnostic>),
    /// Compiling or running failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// A model read and validated, ready to compile.
#[derive(Debug)]
pub struct Model {
    graph: Graph,
}

impl Model {
    /// Reads `xml` and the `.bin` beside it, and validates the whole model.
    pub fn open(xml: impl AsRef<Path>) -> Result<Model, Error> {
        Model::from_graph(
            load_graph(xml.as_ref(), None).map_err(|d| Error::Unreadable(Box::new(d)))?,
        )
    }

    /// As [`Model::open`], with the weights file given explicitly.
    pub fn open_with_weights(xml: impl AsRef<Path>, bin: impl AsRef<Path>) -> Result<Model, Error> {
        Model::from_graph(
            load_graph(xml.as_ref(), Some(bin.as_ref()))
                .map_err(|d| Error::Unreadable(Box::new(d)))?,
        )
    }

    /// A model from the contents of its `.xml` and `.bin` (for callers that hold them in
    /// memory: a fuzzer, a Python or WebAssembly binding), with the checks of [`Model::open`].
    pub fn from_bytes(xml: &[u8], bin: Vec<u8>) -> Result<Model, Error> {
        Model::from_xml_and_weights(xml, irun_ir::Weights::from_vec(Path::new("model.bin"), bin))
    }

    /// As [`Model::from_bytes`], with weights that may be shared between models.
    pub fn from_xml_and_weights(xml: &[u8], weights: irun_ir::Weights) -> Result<Model, Error> {
        let path = Path::new("model.xml");
        let unreadable = |d| Error::Unreadable(Box::new(d));
        let text = irun_ir::xml_text(xml.to_vec(), path).map_err(unreadable)?;
        let model = IrModel::parse(&text, path, weights).map_err(unreadable)?;
        Model::from_graph(Graph::build(model))
    }

    /// A model from a graph built by [`load_graph`] or [`Graph::build`]; `Err` lists its errors.
    pub fn from_graph(graph: Graph) -> Result<Model, Error> {
        if graph.has_errors() {
            return Err(Error::Invalid(
                graph
                    .all_diagnostics()
                    .filter(|d| d.is_error())
                    .cloned()
                    .collect(),
            ));
        }
        Ok(Model { graph })
    }

    /// The validated graph (layers, order, inferred facts, warnings).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Plans the model for `options` (threads, memory limit). Fails if a layer has no kernel.
    pub fn compile(self, options: &Options) -> Result<Executable, Error> {
        Ok(Executable::compile(self.graph, options)?)
    }
}
