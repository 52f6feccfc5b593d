//! `irun._native`: the Python bindings of the irun library. The `irun` Python package
//! (`python/irun/__init__.py`) re-exports what is here, with the type stubs beside it.
//!
//! Inputs are numpy arrays (or anything `numpy.asarray` takes); a C-contiguous, aligned array
//! of the input's element type is borrowed for the length of the call instead of copied
//! (`arrays.rs`). Outputs are handed to numpy without a copy. The GIL is released while a
//! model runs.

mod arrays;
mod diagnostics;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use diagnostics::Diagnostic;

create_exception!(_native, Error, PyException, "Base class of irun's errors.");
create_exception!(
    _native,
    InvalidModel,
    Error,
    "The model file cannot be read or has errors; `.diagnostics` lists them."
);
create_exception!(
    _native,
    RunError,
    Error,
    "Compiling or running the model failed (inputs that do not fit, an op that rejects its values, memory)."
);

/// The exception for an `irun::Error`, with the text the `irun` command prints for it.
fn to_py_err(py: Python<'_>, file: &str, e: irun::Error) -> PyErr {
    match e {
        irun::Error::Unreadable(d) => {
            let text = format!("{}{file}: cannot read the model", d.render(file));
            invalid_model(py, text, vec![*d])
        }
        irun::Error::Invalid(diags) => {
            let mut text: String = diags.iter().map(|d| d.render(file)).collect();
            text.push_str(&format!("{file}: invalid model: {} error(s)", diags.len()));
            invalid_model(py, text, diags)
        }
        irun::Error::Run(e) => run_error(py, e),
        other => Error::new_err(other.to_string()),
    }
}

fn invalid_model(py: Python<'_>, text: String, diags: Vec<irun::Diagnostic>) -> PyErr {
    let err = InvalidModel::new_err(text);
    let list: Vec<Diagnostic> = diags.into_iter().map(Diagnostic::from).collect();
    if let Ok(list) = PyList::new(py, list) {
        let _ = err.value(py).setattr("diagnostics", list);
    }
    err
}

fn run_error(py: Python<'_>, e: irun::RunError) -> PyErr {
    let err = RunError::new_err(e.to_string());
    let _ = err.value(py).setattr("code", e.code);
    err
}

/// A model read from `model.xml` (and the `.bin` beside it, or `weights`) and validated.
/// Raises `InvalidModel` when the file cannot be read or has errors.
#[pyclass(module = "irun")]
struct Model {
    path: PathBuf,
    weights: Option<PathBuf>,
    /// The model as read; taken by the first `compile`, read again by later ones.
    model: Option<irun::Model>,
    diagnostics: Vec<irun::Diagnostic>,
    info: String,
}

impl Model {
    fn open(py: Python<'_>, path: &PathBuf, weights: Option<&PathBuf>) -> PyResult<irun::Model> {
        let opened = py.detach(|| match weights {
            Some(w) => irun::Model::open_with_weights(path, w),
            None => irun::Model::open(path),
        });
        opened.map_err(|e| to_py_err(py, &path.display().to_string(), e))
    }
}

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (path, weights = None))]
    fn new(py: Python<'_>, path: PathBuf, weights: Option<PathBuf>) -> PyResult<Model> {
        let model = Model::open(py, &path, weights.as_ref())?;
        let info = serde_json_string(&model.info());
        Ok(Model {
            diagnostics: model.diagnostics(),
            model: Some(model),
            path,
            weights,
            info,
        })
    }

    /// The warnings and notes of this (valid) model, as `irun check` lists them.
    fn check(&self) -> Vec<Diagnostic> {
        self.diagnostics
            .iter()
            .cloned()
            .map(Diagnostic::from)
            .collect()
    }

    /// Version, op histogram, inputs, outputs, variables and weights (what `irun info --json`
    /// prints), as a dict.
    #[getter]
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.info,))
    }

    /// Plans the model for `threads` workers (default: every core) and at most
    /// `memory_limit` bytes of tensors alive at once (default: the physical memory).
    #[pyo3(signature = (threads = None, memory_limit = None))]
    fn compile(
        &mut self,
        py: Python<'_>,
        threads: Option<usize>,
        memory_limit: Option<u64>,
    ) -> PyResult<CompiledModel> {
        let model = match self.model.take() {
            Some(m) => m,
            None => Model::open(py, &self.path, self.weights.as_ref())?,
        };
        let mut options = irun::Options::new();
        options.threads = threads;
        options.memory_limit = memory_limit;
        let file = self.path.display().to_string();
        let exe = py
            .detach(|| model.compile(&options))
            .map_err(|e| to_py_err(py, &file, e))?;
        Ok(CompiledModel { exe: Arc::new(exe) })
    }

    fn __repr__(&self) -> String {
        format!("irun.Model({:?})", self.path.display().to_string())
    }
}

fn serde_json_string(info: &irun::ModelInfo) -> String {
    serde_json::to_string(info).expect("ModelInfo serializes")
}

/// A model input or output: its name (the key `__call__` takes or gives), every tensor
/// name, its shape (ints, or None for a dynamic dim) and numpy dtype name.
#[pyclass(module = "irun", frozen, get_all)]
struct Port {
    name: String,
    names: Vec<String>,
    shape: Option<Vec<Option<u64>>>,
    dtype: String,
}

#[pymethods]
impl Port {
    fn __repr__(&self) -> String {
        let shape = match &self.shape {
            None => "None".to_string(),
            Some(dims) => {
                let d: Vec<String> = dims
                    .iter()
                    .map(|d| d.map_or("None".into(), |n| n.to_string()))
                    .collect();
                format!("({}{})", d.join(", "), if d.len() == 1 { "," } else { "" })
            }
        };
        format!(
            "Port(name={:?}, shape={shape}, dtype={:?})",
            self.name, self.dtype
        )
    }
}

fn shape_of(s: &irun::PartialShape) -> Option<Vec<Option<u64>>> {
    s.dims()
        .map(|dims| dims.iter().map(|d| d.get_static()).collect())
}

/// A compiled model: call it with a dict of arrays (keyed by input name) or a list of them
/// (in input order); it returns a dict of numpy arrays keyed by output name.
#[pyclass(module = "irun", frozen)]
struct CompiledModel {
    exe: Arc<irun::Executable>,
}

#[pymethods]
impl CompiledModel {
    /// The model's inputs, in model order.
    #[getter]
    fn inputs(&self) -> Vec<Port> {
        let exe = &self.exe;
        exe.inputs()
            .iter()
            .map(|i| Port {
                name: i
                    .tensor_names
                    .first()
                    .cloned()
                    .unwrap_or_else(|| i.layer_name.clone()),
                names: i.tensor_names.clone(),
                shape: shape_of(&i.shape),
                dtype: arrays::dtype_name(i.element_type).to_string(),
            })
            .collect()
    }

    /// The model's outputs, in model order.
    #[getter]
    fn outputs(&self) -> Vec<Port> {
        self.exe
            .outputs()
            .iter()
            .map(|o| Port {
                name: o.key.clone(),
                names: vec![o.key.clone()],
                shape: shape_of(&o.shape),
                dtype: arrays::dtype_name(o.element_type).to_string(),
            })
            .collect()
    }

    /// The worker threads a call uses.
    #[getter]
    fn threads(&self) -> usize {
        self.exe.threads()
    }

    /// A state for this (stateful) model with every variable unset.
    fn create_state(&self) -> State {
        State {
            inner: self.exe.new_state(),
        }
    }

    /// Runs the model. `inputs`: a dict from input name (any tensor name of the input, or
    /// its Parameter's name) to an array, or a list of arrays in input order. `state`: carry
    /// a stateful model's variables from call to call (`create_state()`); without it each
    /// call starts from the initial values. Do not change an input array from another thread
    /// while a call runs: a C-contiguous array of the input's dtype is read where it lies.
    #[pyo3(signature = (inputs, state = None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        state: Option<PyRefMut<'py, State>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        // A state may keep an input beyond the call (an Assign of a Parameter): its inputs
        // are copied, so that it never reads an array the caller has since changed.
        let named = self.named_inputs(py, inputs, state.is_none())?;
        let exe = self.exe.clone();
        let outputs = match state {
            Some(mut s) => {
                let st = &mut s.inner;
                py.detach(move || exe.run_with_state(st, named))
            }
            None => py.detach(move || exe.run(named)),
        }
        .map_err(|e| run_error(py, e))?;
        let dict = PyDict::new(py);
        for (key, tensor) in outputs {
            dict.set_item(key, arrays::to_numpy(py, tensor)?)?;
        }
        Ok(dict)
    }

    /// Greedy generation with a stateful decoder exported by optimum-intel (inputs
    /// `input_ids`, `attention_mask`, optionally `position_ids` and `beam_idx`; output
    /// `logits`), the loop `irun generate` runs: the prompt on a fresh state, then one token
    /// per step, stopping after `max_new_tokens` or a token of `end_tokens`
    /// (`irun.end_tokens(model_dir)` reads the export's). `on_token(id)` is called with each
    /// token as it comes; returning `False` stops. Returns a dict: `tokens` (list of ids),
    /// `prefill_ms`, `step_ms` (each later step's time).
    #[pyo3(signature = (prompt_ids, max_new_tokens = 32, end_tokens = None, on_token = None))]
    fn generate<'py>(
        &self,
        py: Python<'py>,
        prompt_ids: Vec<i64>,
        max_new_tokens: usize,
        end_tokens: Option<Vec<i64>>,
        on_token: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let exe = self.exe.clone();
        let end = end_tokens.unwrap_or_default();
        let mut callback_error: Option<PyErr> = None;
        let done = py.detach(|| {
            let mut generator = exe.generator()?;
            generator.generate(&prompt_ids, max_new_tokens, &end, |token| {
                let Some(f) = &on_token else { return true };
                Python::attach(|py| match f.call1(py, (token,)) {
                    // Only `False` stops: a callback returning None goes on.
                    Ok(r) => !matches!(r.extract::<bool>(py), Ok(false)),
                    Err(e) => {
                        callback_error = Some(e);
                        false
                    }
                })
            })
        });
        if let Some(e) = callback_error {
            return Err(e);
        }
        let done = done.map_err(|e| run_error(py, e))?;
        let dict = PyDict::new(py);
        dict.set_item("tokens", done.tokens)?;
        dict.set_item("prefill_ms", done.prefill.as_secs_f64() * 1e3)?;
        let steps: Vec<f64> = done.steps.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        dict.set_item("step_ms", steps)?;
        Ok(dict)
    }
}

impl CompiledModel {
    fn named_inputs(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyAny>,
        borrow: bool,
    ) -> PyResult<Vec<(String, irun::Tensor)>> {
        let infos = self.exe.inputs();
        let type_of = |name: &str| {
            infos
                .iter()
                .find(|i| i.layer_name == name || i.tensor_names.iter().any(|t| t == name))
                .map(|i| i.element_type)
        };
        if let Ok(dict) = inputs.cast::<PyDict>() {
            dict.iter()
                .map(|(k, v)| {
                    let name: String = k.extract()?;
                    let t = arrays::to_tensor(py, &v, type_of(&name), borrow, &name)?;
                    Ok((name, t))
                })
                .collect()
        } else {
            let values: Vec<Bound<'_, PyAny>> = inputs.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(
                    "inputs must be a dict of arrays or a list of arrays in input order",
                )
            })?;
            if values.len() != infos.len() {
                return Err(RunError::new_err(format!(
                    "the model has {} input(s), got {} array(s)",
                    infos.len(),
                    values.len()
                )));
            }
            infos
                .iter()
                .zip(values)
                .map(|(info, v)| {
                    let name = info.layer_name.clone();
                    let t = arrays::to_tensor(py, &v, Some(info.element_type), borrow, &name)?;
                    Ok((name, t))
                })
                .collect()
        }
    }
}

/// The variables of a stateful model (ReadValue/Assign) between calls: pass it as `state=`.
#[pyclass(module = "irun")]
struct State {
    inner: irun::State,
}

#[pymethods]
impl State {
    /// The `variable_id`s of the model's variables.
    #[getter]
    fn variables(&self) -> Vec<String> {
        self.inner
            .variables()
            .iter()
            .map(|v| v.id.clone())
            .collect()
    }

    /// A variable's value (a copy), or None while it is unset (the next call reads its
    /// initial value).
    fn get<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.inner.get(id).map_err(|e| run_error(py, e))? {
            Some(t) => Ok(Some(arrays::to_numpy(py, t.deep_clone())?)),
            None => Ok(None),
        }
    }

    /// Sets a variable's value; it must fit the variable's type and shape.
    fn set(&mut self, py: Python<'_>, id: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let ty = self
            .inner
            .variables()
            .iter()
            .find(|v| v.id == id)
            .map(|v| v.element_type);
        let t = arrays::to_tensor(py, value, ty, false, id)?;
        self.inner.set(id, t).map_err(|e| run_error(py, e))
    }

    /// Unsets one variable, or all of them.
    #[pyo3(signature = (id = None))]
    fn reset(&mut self, py: Python<'_>, id: Option<&str>) -> PyResult<()> {
        match id {
            Some(id) => self.inner.reset_variable(id).map_err(|e| run_error(py, e)),
            None => {
                self.inner.reset();
                Ok(())
            }
        }
    }
}

/// Every diagnostic of the model at `path` (errors, warnings and notes), as `irun check`
/// lists them. Raises `InvalidModel` only when the file cannot be read at all.
#[pyfunction]
fn check(py: Python<'_>, path: PathBuf) -> PyResult<Vec<Diagnostic>> {
    let diags = py
        .detach(|| irun::check(&path))
        .map_err(|e| to_py_err(py, &path.display().to_string(), e))?;
    Ok(diags.into_iter().map(Diagnostic::from).collect())
}

/// The end-of-sequence token ids an optimum-intel export names in `model_dir`
/// (`eos_token_id` of `generation_config.json`, else of `config.json`); empty when neither
/// names one.
#[pyfunction]
fn end_tokens(py: Python<'_>, model_dir: PathBuf) -> PyResult<Vec<i64>> {
    irun::end_tokens(&model_dir).map_err(|e| to_py_err(py, &model_dir.display().to_string(), e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("InvalidModel", py.get_type::<InvalidModel>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add_class::<Model>()?;
    m.add_class::<CompiledModel>()?;
    m.add_class::<State>()?;
    m.add_class::<Port>()?;
    m.add_class::<Diagnostic>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(end_tokens, m)?)?;
    Ok(())
}
