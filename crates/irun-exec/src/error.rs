//! The error of compiling or running a model.

use irun_ir::LayerRef;

/// What went wrong, for callers that map errors to exit codes or retry policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunErrorKind {
    /// The model has errors (`irun check` lists them) or a layer irun cannot run.
    InvalidModel,
    /// The inputs do not match the model: missing, unknown, wrong element type or shape.
    Input,
    /// An op rejected its inputs at run time (an out-of-range index, a shape only values show).
    Op,
    /// A tensor over the memory limit, or threads that could not start.
    Resources,
}

/// A compile or run error: kind, diagnostic code when there is one, message, and the layer it
/// is about.
/// Displayed as the CLI prints it: `[E0601] message` (the code only when there is one).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}{message}", code.map(|c| format!("[{c}] ")).unwrap_or_default())]
pub struct RunError {
    pub kind: RunErrorKind,
    pub code: Option<&'static str>,
    pub message: String,
    pub layer: Option<Box<LayerRef>>,
}

impl RunError {
    pub fn new(kind: RunErrorKind, message: String) -> RunError {
        RunError {
            kind,
            code: None,
            message,
            layer: None,
        }
    }

    pub fn with_code(mut self, code: &'static str) -> RunError {
        self.code = Some(code);
        self
    }

    pub fn on_layer(mut self, layer: Option<LayerRef>) -> RunError {
        self.layer = layer.map(Box::new);
        self
    }
}
