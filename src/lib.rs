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
//! let exe = model.compile(&Options::new().threads(2))?;
//! let outputs = exe.run([
//!     ("data", Tensor::from_i32(vec![4], vec![0, 0, 0, 10])?),
//!     ("indices", Tensor::from_i64(vec![7], vec![0, 0, 1, 1, 2, 2, 2])?),
//!     ("updates", Tensor::from_i32(vec![7], vec![-1, -2, 1, 2, -5, -5, -6])?),
//! ])?;
//! assert_eq!(outputs[0].0, "out");
//! assert_eq!(outputs[0].1.values::<i32>().unwrap(), &[-2, 1, -6, 10]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Runnable versions are in `examples/` (`cargo run --release --example scatter`; with the
//! `ndarray` feature, `--example ndarray` passes and gets ndarray arrays).
//!
//! [`check`] lists every problem of a model file, as `irun check` does. A stateful model
//! (ReadValue/Assign) carries its variables from one run to the next in a [`State`]
//! ([`Executable::run_with_state`]).

#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use irun_graph::Graph;

pub use irun_exec::generate::{argmax, Generation, Generator};
pub use irun_exec::{InputInfo, Options, OutputInfo, RunError, RunErrorKind, State, VariableInfo};
pub use irun_graph::ModelInfo;
pub use irun_ir::{BodyRef, Diagnostic, LayerRef, PortDirection, PortRef, Pos, Severity};
pub use irun_tensor::{
    bf16, f16, read_npy, read_npz, write_npy, write_npz, Dim, ElementType, PartialShape, Scalar,
    Storage, Tensor, TensorError,
};

/// Why a model could not be opened, compiled or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read or is not an IR file (the diagnostic says which).
    #[error("{0}")]
    Unreadable(Box<Diagnostic>),
    /// The model has errors; every error diagnostic is here (as `irun check` prints them).
    #[error("the model is invalid: {} error(s), first: {}", .0.len(), .0.first().map(|d| d.to_string()).unwrap_or_default())]
    Invalid(Vec<Diagnostic>),
    /// Compiling or running failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A configuration file beside the model (`generation_config.json` ...) is unreadable.
    #[error("{0}")]
    Config(String),
}

/// The end-of-sequence token ids an optimum-intel export names in `model_dir`
/// (`eos_token_id` of `generation_config.json`, else of `config.json`); none when neither
/// file names one.
pub fn end_tokens(model_dir: impl AsRef<Path>) -> Result<Vec<i64>, Error> {
    irun_exec::generate::end_tokens(model_dir.as_ref()).map_err(Error::Config)
}

/// Every diagnostic of the model at `xml` (its `.bin` beside it), errors, warnings and notes,
/// as `irun check` lists them; `Err` when the file cannot be read at all.
pub fn check(xml: impl AsRef<Path>) -> Result<Vec<Diagnostic>, Error> {
    let graph = irun_graph::load(xml.as_ref(), None).map_err(|d| Error::Unreadable(Box::new(d)))?;
    Ok(graph.all_diagnostics().cloned().collect())
}

/// A model read and validated, ready to compile.
#[derive(Debug)]
pub struct Model {
    graph: Graph,
}

impl Model {
    /// Reads `xml` and the `.bin` beside it, and validates the whole model.
    pub fn open(xml: impl AsRef<Path>) -> Result<Model, Error> {
        Model::validated(irun_graph::load(xml.as_ref(), None))
    }

    /// As [`Model::open`], with the weights file given explicitly.
    pub fn open_with_weights(xml: impl AsRef<Path>, bin: impl AsRef<Path>) -> Result<Model, Error> {
        Model::validated(irun_graph::load(xml.as_ref(), Some(bin.as_ref())))
    }

    /// A model from the contents of its `.xml` and `.bin` (for callers that hold them in
    /// memory), with the checks of [`Model::open`].
    pub fn from_bytes(xml: &[u8], bin: Vec<u8>) -> Result<Model, Error> {
        let weights = irun_ir::Weights::from_vec(Path::new("model.bin"), bin);
        Model::validated(irun_graph::from_bytes(xml, weights))
    }

    fn validated(graph: Result<Graph, Diagnostic>) -> Result<Model, Error> {
        let graph = graph.map_err(|d| Error::Unreadable(Box::new(d)))?;
        if graph.has_errors() {
            return Err(Error::Invalid(graph.errors().cloned().collect()));
        }
        Ok(Model { graph })
    }

    /// The warnings and notes of this valid model (it has no errors).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.graph.all_diagnostics().cloned().collect()
    }

    /// Version, op histogram, inputs, outputs, variables and weights, as `irun info` prints.
    pub fn info(&self) -> ModelInfo {
        ModelInfo::of(&self.graph)
    }

    /// Plans the model for `options` (threads, memory limit). Fails if a layer has no kernel.
    pub fn compile(self, options: &Options) -> Result<Executable, Error> {
        let inner = irun_exec::Executable::compile(self.graph, options)?;
        Ok(Executable { inner })
    }
}

/// An input value for [`Executable::run`]: a tensor the run may take over (an owned
/// [`Tensor`]: an op may update it in place) or one the caller keeps (an `Arc<Tensor>`,
/// which the run only reads). With the `ndarray` feature, an ndarray `Array` too.
#[derive(Clone, Debug)]
pub struct Input(Arc<Tensor>);

impl From<Tensor> for Input {
    fn from(t: Tensor) -> Input {
        Input(Arc::new(t))
    }
}

impl From<Arc<Tensor>> for Input {
    fn from(t: Arc<Tensor>) -> Input {
        Input(t)
    }
}

#[cfg(feature = "ndarray")]
impl<T: Scalar, D: ndarray::Dimension> From<ndarray::Array<T, D>> for Input {
    /// Without a copy when the array is in standard layout (see `From<Array> for Tensor`).
    fn from(a: ndarray::Array<T, D>) -> Input {
        Input::from(Tensor::from(a))
    }
}

/// A compiled model: run it as often as needed, from any number of threads.
#[derive(Debug)]
pub struct Executable {
    inner: irun_exec::Executable,
}

impl Executable {
    /// The model's inputs (Parameters) in model order, with their names, types and shapes.
    pub fn inputs(&self) -> &[InputInfo] {
        self.inner.inputs()
    }

    /// The model's outputs (Results) in model order, with the keys [`Executable::run`] gives
    /// them.
    pub fn outputs(&self) -> &[OutputInfo] {
        self.inner.outputs()
    }

    /// The model's state variables (ReadValue/Assign pairs); empty for a stateless model.
    pub fn variables(&self) -> &[VariableInfo] {
        self.inner.variables()
    }

    /// A state for this model with every variable unset: its first run reads the initial
    /// values. Runs with the same state carry the variables over, as one OpenVINO infer
    /// request does.
    pub fn new_state(&self) -> State {
        self.inner.new_state()
    }

    /// The worker threads runs use.
    pub fn threads(&self) -> usize {
        self.inner.threads()
    }

    /// The most bytes of tensors a run may hold at once.
    pub fn memory_limit(&self) -> u64 {
        self.inner.memory_limit()
    }

    /// Version, op histogram, inputs, outputs, variables and weights, as `irun info` prints.
    pub fn info(&self) -> ModelInfo {
        ModelInfo::of(self.inner.graph())
    }

    /// Runs the model on named inputs (a tensor name of a model input, or its Parameter's
    /// layer name) and gives the outputs in model order, each with its key (the output's
    /// first tensor name, else `output_<i>`). A stateful model runs as on its first run
    /// (initial values), and what its Assigns store is dropped: use
    /// [`Executable::run_with_state`] to carry it over.
    pub fn run<K, V>(
        &self,
        inputs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Vec<(String, Tensor)>, RunError>
    where
        K: Into<String>,
        V: Into<Input>,
    {
        self.run_with_state(&mut self.new_state(), inputs)
    }

    /// Runs the model with `state`: each ReadValue gives its variable's stored value (the
    /// initial value while unset) and, when the run succeeds, each Assign's input becomes its
    /// variable's value. If a run that updated a variable in place fails, that variable is
    /// unset (the error says which) rather than left half-updated.
    pub fn run_with_state<K, V>(
        &self,
        state: &mut State,
        inputs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Vec<(String, Tensor)>, RunError>
    where
        K: Into<String>,
        V: Into<Input>,
    {
        let inputs = inputs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into().0))
            .collect();
        self.inner.run_values_with_state(state, inputs)
    }

    /// A greedy-generation session for a stateful decoder exported by optimum-intel
    /// (inputs `input_ids`, `attention_mask`, optionally `position_ids` and `beam_idx`;
    /// output `logits`; the KV cache in state variables): what `irun generate` runs.
    ///
    /// ```
    /// use irun::{end_tokens, Model, Options};
    ///
    /// let dir = std::path::Path::new("models/llm/llama_int4_asym");
    /// let exe = Model::open(dir.join("openvino_model.xml"))?.compile(&Options::new())?;
    /// let mut generator = exe.generator()?;
    /// let done = generator.generate(&[1, 17, 42], 4, &end_tokens(dir)?, |_| true)?;
    /// assert!(!done.tokens.is_empty() && done.tokens.len() <= 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generator(&self) -> Result<Generator<'_>, RunError> {
        Generator::new(&self.inner)
    }
}
