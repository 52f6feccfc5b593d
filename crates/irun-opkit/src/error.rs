//! The error every op reports through ([`OpError`] and its [`codes`]), and the helpers that
//! make one instead of a panic or an abort: the first error of parallel tasks, fallible
//! allocation. At the bottom of the crate: it depends on no other module here.

use irun_ir::{codes as ir_codes, PortDirection};

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
    /// The op type exists in no OpenVINO opset (a typo, an empty type).
    pub const UNKNOWN_OP_TYPE: &str = "E0406";
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
    /// An index value outside the range its op allows (found at run time).
    pub const INDEX_OUT_OF_RANGE: &str = "E0601";
    /// Input shapes or values an op cannot run on, found at run time.
    pub const RUN_SHAPE: &str = "E0602";
    /// An element type (or type and reduction) the kernel does not implement.
    pub const UNSUPPORTED_TYPE: &str = "E0603";
    /// A tensor larger than the memory limit, or an allocation that failed.
    pub const MEMORY: &str = "E0604";
    /// The op has no kernel.
    pub const NOT_EXECUTABLE: &str = "E0605";
    /// An input value the op cannot compute with (integer division by zero), found at run time.
    pub const RUN_VALUE: &str = "E0606";
    /// A kernel returned outputs that contradict its op's inferred facts (a bug in irun).
    pub const INTERNAL: &str = "E0607";
    pub use super::ir_codes::*;
}

/// A rule an op's inputs or attributes break. The graph pass adds the layer and position.
/// Displayed as `[E0501] input 1: message` (the port or attribute when there is one).
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

    /// The same error under another code.
    pub fn with_code(mut self, code: &'static str) -> OpError {
        self.code = code;
        self
    }

    pub fn attribute(name: &str, message: impl Into<String>) -> OpError {
        OpError {
            attribute: Some(name.to_string()),
            ..OpError::new(codes::BAD_ATTRIBUTE, message)
        }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] ", self.code)?;
        match (&self.port, &self.attribute) {
            (Some((PortDirection::Input, slot)), _) => write!(f, "input {slot}: ")?,
            (Some((PortDirection::Output, slot)), _) => write!(f, "output {slot}: ")?,
            (None, Some(name)) => write!(f, "attribute {name}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

/// A zero-filled `Vec`, or a clean error instead of an abort when memory runs out.
pub fn try_zeroed<T: Copy + Default>(n: usize) -> Result<Vec<T>, OpError> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, T::default());
    Ok(v)
}

/// An empty `Vec` with room for exactly `n` values, for a kernel to write into its capacity
/// (nothing zero-filled first), or a clean error instead of an abort when memory runs out.
pub fn try_with_capacity<T>(n: usize) -> Result<Vec<T>, OpError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        OpError::new(
            codes::MEMORY,
            format!(
                "cannot allocate {n} elements ({} bytes)",
                n.saturating_mul(std::mem::size_of::<T>())
            ),
        )
    })?;
    Ok(v)
}

/// The values of parallel tasks' results, or the error at the smallest position, so that a
/// parallel run reports the same error as a sequential one whichever task finds it first.
pub fn first_error<T>(
    results: impl IntoIterator<Item = Result<T, (usize, OpError)>>,
) -> Result<Vec<T>, OpError> {
    let mut values = Vec::new();
    let mut first: Option<(usize, OpError)> = None;
    for r in results {
        match r {
            Ok(v) => values.push(v),
            Err((pos, e)) => {
                if first.as_ref().is_none_or(|(p, _)| pos < *p) {
                    first = Some((pos, e));
                }
            }
        }
    }
    first.map_or(Ok(values), |(_, e)| Err(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_error_keeps_the_smallest_position() {
        let e = |p: usize| Err::<(), _>((p, OpError::new("E", p.to_string())));
        let r = first_error([e(9), Ok(()), e(3), e(5)]);
        assert_eq!(r.unwrap_err().message, "3");
        assert_eq!(
            first_error([Ok::<_, (usize, OpError)>(1), Ok(2)]).unwrap(),
            vec![1, 2]
        );
    }
}
