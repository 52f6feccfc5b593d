//! The values of a model's state variables between runs: what OpenVINO keeps per infer
//! request for ReadValue/Assign pairs (an LLM's KV cache, an RNN's hidden state).

use std::sync::Arc;

use irun_ops::Value;
use irun_tensor::{ElementType, PartialShape, Tensor};

use crate::error::{RunError, RunErrorKind};

/// A state variable as its ReadValue declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct VariableInfo {
    /// The `variable_id`.
    pub id: String,
    pub element_type: ElementType,
    pub shape: PartialShape,
}

impl VariableInfo {
    /// Whether `t` may be the variable's value.
    fn check(&self, t: &Tensor) -> Result<(), String> {
        if self.element_type != ElementType::Dynamic && t.element_type() != self.element_type {
            return Err(format!(
                "variable `{}` holds {} values, not {}",
                self.id,
                self.element_type,
                t.element_type()
            ));
        }
        if !self.shape.accepts(t.shape()) {
            return Err(format!(
                "variable `{}` has shape {}, which {} does not fit",
                self.id,
                self.shape,
                irun_tensor::fmt_shape(t.shape())
            ));
        }
        Ok(())
    }
}

/// The variables of one model between runs ([`crate::Executable::new_state`]). An unset
/// variable gives its initial value on the next run, as after OpenVINO's `reset_state()`.
#[derive(Clone, Debug)]
pub struct State {
    pub(crate) variables: Arc<[VariableInfo]>,
    pub(crate) values: Vec<Option<Value>>,
}

impl State {
    pub(crate) fn new(variables: Arc<[VariableInfo]>) -> State {
        State {
            values: vec![None; variables.len()],
            variables,
        }
    }

    /// The model's variables, in XML order of their first layer.
    pub fn variables(&self) -> &[VariableInfo] {
        &self.variables
    }

    fn index(&self, id: &str) -> Result<usize, RunError> {
        self.variables
            .iter()
            .position(|v| v.id == id)
            .ok_or_else(|| {
                let ids: Vec<String> = self
                    .variables
                    .iter()
                    .map(|v| format!("`{}`", v.id))
                    .collect();
                RunError::new(
                    RunErrorKind::Input,
                    format!(
                        "the model has no variable `{id}`; its variables are: {}",
                        if ids.is_empty() {
                            "none".into()
                        } else {
                            ids.join(", ")
                        }
                    ),
                )
            })
    }

    /// The stored value of variable `id`; `None` while it is unset.
    pub fn get(&self, id: &str) -> Result<Option<&Tensor>, RunError> {
        Ok(self.values[self.index(id)?].as_deref())
    }

    /// Sets variable `id`, checked against its type and shape; the next run's ReadValue gives it.
    pub fn set(&mut self, id: &str, value: Tensor) -> Result<(), RunError> {
        let i = self.index(id)?;
        self.variables[i]
            .check(&value)
            .map_err(|m| RunError::new(RunErrorKind::Input, m))?;
        self.values[i] = Some(Arc::new(value));
        Ok(())
    }

    /// Unsets every variable: the next run starts from the initial values.
    pub fn reset(&mut self) {
        self.values.iter_mut().for_each(|v| *v = None);
    }

    /// Unsets variable `id`.
    pub fn reset_variable(&mut self, id: &str) -> Result<(), RunError> {
        let i = self.index(id)?;
        self.values[i] = None;
        Ok(())
    }

    /// The set variables and their values, in variable order.
    pub fn values(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.variables
            .iter()
            .zip(&self.values)
            .filter_map(|(info, v)| v.as_deref().map(|t| (info.id.as_str(), t)))
    }

    /// Bytes the stored values hold.
    pub(crate) fn byte_size(&self) -> u64 {
        self.values
            .iter()
            .flatten()
            .map(|v| v.byte_size() as u64)
            .sum()
    }

    /// Whether a value from a run fits variable `i` (an Assign's input).
    pub(crate) fn check(&self, i: usize, t: &Tensor) -> Result<(), String> {
        self.variables[i].check(t)
    }
}
