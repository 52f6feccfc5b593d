//! Binding the caller's named inputs to the model's Parameters: by tensor name or layer name,
//! each once, of the declared element type and a shape the declared one accepts.

use irun_ops::Value;
use irun_tensor::ElementType;

use crate::{Executable, InputInfo, RunError, RunErrorKind};

impl Executable {
    /// The index of the model input named `key`.
    pub fn input_index(&self, key: &str) -> Option<usize> {
        self.inputs
            .iter()
            .position(|i| i.tensor_names.iter().any(|n| n == key))
            .or_else(|| self.inputs.iter().position(|i| i.layer_name == key))
    }

    /// Matches named inputs to Parameters and checks their types and shapes.
    pub(crate) fn bind_inputs(&self, given: Vec<(String, Value)>) -> Result<Vec<Value>, RunError> {
        let mut bound: Vec<Option<(String, Value)>> = vec![None; self.inputs.len()];
        for (key, value) in given {
            let i = self.check_input(&key, value.element_type(), value.shape())?;
            if let Some((first, _)) = &bound[i] {
                return Err(RunError::new(
                    RunErrorKind::Input,
                    format!(
                        "`{key}` and `{first}` both name model input {i} ({})",
                        self.inputs[i].layer_name
                    ),
                ));
            }
            bound[i] = Some((key, value));
        }
        let missing: Vec<String> = bound
            .iter()
            .zip(&self.inputs)
            .filter(|(b, _)| b.is_none())
            .map(|(_, info)| input_label(info))
            .collect();
        if !missing.is_empty() {
            return Err(RunError::new(
                RunErrorKind::Input,
                format!("missing model input(s): {}", missing.join(", ")),
            ));
        }
        Ok(bound.into_iter().map(|b| b.expect("checked").1).collect())
    }

    /// Whether a value of type `ty` and shape `shape` may be the model input `key` names (a
    /// tensor name or the Parameter's name): its index if so. What a run checks of each
    /// input, for readers that can tell before they read the values (an `.npy` header).
    pub fn check_input(
        &self,
        key: &str,
        ty: ElementType,
        shape: &[usize],
    ) -> Result<usize, RunError> {
        let i = self.input_index(key).ok_or_else(|| {
            RunError::new(
                RunErrorKind::Input,
                format!(
                    "input `{key}` is not an input of the model; its inputs are: {}",
                    self.describe_inputs()
                ),
            )
        })?;
        let info = &self.inputs[i];
        if info.element_type != ElementType::Dynamic && ty != info.element_type {
            return Err(RunError::new(
                RunErrorKind::Input,
                format!(
                    "input `{key}` has element type {ty}, the model expects {}",
                    info.element_type
                ),
            ));
        }
        if !info.shape.accepts(shape) {
            return Err(RunError::new(
                RunErrorKind::Input,
                format!(
                    "input `{key}` has shape {}, the model expects {}",
                    irun_tensor::fmt_shape(shape),
                    info.shape
                ),
            ));
        }
        Ok(i)
    }

    pub(crate) fn describe_inputs(&self) -> String {
        self.inputs
            .iter()
            .map(input_label)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn input_label(info: &InputInfo) -> String {
    match info.tensor_names.first() {
        Some(n) if *n != info.layer_name => format!("`{n}` (layer {})", info.layer_name),
        Some(n) => format!("`{n}`"),
        None => format!("`{}`", info.layer_name),
    }
}
