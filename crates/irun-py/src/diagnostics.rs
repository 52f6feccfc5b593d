//! `irun.Diagnostic`: one problem `check` found, with where it is.

use pyo3::prelude::*;

/// One problem found in a model: its stable code (`E0501`), severity (`error`, `warning`,
/// `note`), message, the line in the `.xml`, the layer and port it is about, and notes.
/// `str()` gives one line; `render(file)` the block `irun check` prints.
#[pyclass(module = "irun", frozen)]
pub struct Diagnostic {
    inner: irun::Diagnostic,
}

impl From<irun::Diagnostic> for Diagnostic {
    fn from(inner: irun::Diagnostic) -> Diagnostic {
        Diagnostic { inner }
    }
}

#[pymethods]
impl Diagnostic {
    /// The stable code, such as `E0501`.
    #[getter]
    fn code(&self) -> &'static str {
        self.inner.code
    }

    /// `error`, `warning` or `note`.
    #[getter]
    fn severity(&self) -> String {
        self.inner.severity.to_string()
    }

    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }

    /// The line in the `.xml` (1-based), when the problem has a position.
    #[getter]
    fn line(&self) -> Option<u32> {
        self.inner.pos.map(|p| p.line)
    }

    /// The layer's id, when the problem is about a layer.
    #[getter]
    fn layer_id(&self) -> Option<u64> {
        self.inner.layer.as_ref().map(|l| l.id)
    }

    /// The layer's name, when the problem is about a layer.
    #[getter]
    fn layer(&self) -> Option<&str> {
        self.inner.layer.as_ref().map(|l| l.name.as_str())
    }

    /// The layer's type and opset, such as `ScatterUpdate-opset3`.
    #[getter]
    fn layer_type(&self) -> Option<String> {
        self.inner.layer.as_ref().map(|l| match l.version.as_str() {
            "" => l.type_name.clone(),
            v => format!("{}-{v}", l.type_name),
        })
    }

    /// The port, such as `input 1` or `output 0 (port id 3)`, when there is one.
    #[getter]
    fn port(&self) -> Option<String> {
        self.inner.port.as_ref().map(|p| p.to_string())
    }

    /// The bodies (of Loop, TensorIterator, If) the layer is inside, outermost first.
    #[getter]
    fn inside(&self) -> Vec<String> {
        self.inner.inside.iter().map(|b| b.to_string()).collect()
    }

    #[getter]
    fn notes(&self) -> Vec<String> {
        self.inner.notes.clone()
    }

    /// The diagnostic as `irun check` prints it for `file`.
    fn render(&self, file: &str) -> String {
        self.inner.render(file)
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("<irun.Diagnostic {}>", self.inner)
    }
}
