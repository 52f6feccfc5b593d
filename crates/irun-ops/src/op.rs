//! The op trait and the error every op reports through.

use std::fmt::Debug;

use irun_ir::{codes as ir_codes, PortDirection};

use crate::fact::Fact;

/// An op of a graph node, built from a layer's attributes by the registry.
///
/// `infer` is required: every op validates its inputs and computes its output facts. It may
/// read the values of exactly the inputs listed in `value_inputs` (the axis of the scatter
/// ops, the target shape of Reshape); the graph pass supplies those when they are constant.
pub trait Op: Debug + Send + Sync {
    /// `Type-vN` of the C++ class, e.g. `ScatterElementsUpdate-12` (used in messages).
    fn name(&self) -> &'static str;

    /// Input facts -> output facts, or the first rule the inputs break.
    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError>;

    /// Inputs whose values `infer` reads when they are known.
    fn value_inputs(&self) -> &'static [usize] {
        &[]
    }
}

/// Diagnostic codes of ops (E04xx: resolution and attributes; E05xx: types and shapes).
pub mod codes {
    /// `version` names no opset irun knows (OpenVINO 2026.4 has opset1..opset16).
    pub const UNKNOWN_OPSET: &str = "E0401";
    /// The op type is not supported by irun (for that opset).
    pub const UNSUPPORTED_OP: &str = "W0402";
    /// An attribute is missing or has an invalid value.
    pub const BAD_ATTRIBUTE: &str = "E0403";
    /// An attribute the op does not have.
    pub const UNKNOWN_ATTRIBUTE: &str = "W0404";
    /// Wrong number of inputs or outputs.
    pub const ARITY: &str = "E0405";
    /// An element type rule is broken.
    pub const ELEMENT_TYPE: &str = "E0501";
    /// A rank rule is broken.
    pub const RANK: &str = "E0502";
    /// Dimensions are incompatible.
    pub const SHAPE: &str = "E0503";
    /// An axis is outside `[-rank, rank-1]`.
    pub const AXIS: &str = "E0504";
    /// A declared output port (`<dim>`/precision) contradicts the inferred one.
    pub const DECLARED_OUTPUT: &str = "E0505";
    /// A declared input port contradicts what its producer outputs.
    pub const DECLARED_INPUT: &str = "E0506";
    /// A value input (e.g. an axis) holds a value the op cannot use.
    pub const BAD_VALUE: &str = "E0507";
    pub use super::ir_codes::*;
}

/// A rule an op's inputs or attributes break. The graph pass adds the layer and position.
#[derive(Clone, Debug, PartialEq)]
pub struct OpError {
    pub code: &'static str,
    pub message: String,
    /// The port the problem is about, when there is one.
    pub port: Option<(PortDirection, usize)>,
    /// The attribute the problem is about, when there is one.
    pub attribute: Option<String>,
}

impl OpError {
    pub fn new(code: &'static str, message: impl Into<String>) -> OpError {
        OpError {
            code,
            message: message.into(),
            port: None,
            attribute: None,
        }
    }

    /// An error about input slot `slot`.
    pub fn input(slot: usize, code: &'static str, message: impl Into<String>) -> OpError {
        OpError {
            port: Some((PortDirection::Input, slot)),
            ..OpError::new(code, message)
        }
    }

    pub fn attribute(name: &str, message: impl Into<String>) -> OpError {
        OpError {
            attribute: Some(name.to_string()),
            ..OpError::new(codes::BAD_ATTRIBUTE, message)
        }
    }
}

/// Checks the number of inputs.
pub fn expect_inputs(inputs: &[Fact], n: usize, op: &str) -> Result<(), OpError> {
    if inputs.len() != n {
        return Err(OpError::new(
            codes::ARITY,
            format!("{op} takes {n} inputs, got {}", inputs.len()),
        ));
    }
    Ok(())
}
