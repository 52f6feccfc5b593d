//! Loop-5, TensorIterator-1 and If-8: layers whose work is a body graph.
//!
//! Their bodies are graphs of their own, built (and checked) once like the model: every
//! diagnostic of a body carries the path to it. The port map becomes a [`ControlFlow`]: for
//! each body Parameter, where its value comes from in each iteration; for each output of the
//! layer, which body Result gives it and whether iterations are joined. The layer's op
//! ([`FlowOp`]) infers through the bodies; the executor runs them.

mod flow_op;
mod port_map;

use std::sync::Arc;

use irun_ir::Layer;
use irun_ops::{codes, Fact, OpError};

use crate::graph::Graph;

pub use flow_op::FlowOp;
pub(crate) use port_map::build;

/// Which of the three ops a layer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKind {
    Loop,
    TensorIterator,
    If,
}

impl FlowKind {
    /// The kind of a layer of one of the three types; `None` for any other type. A version
    /// before the op's first opset is an error.
    pub fn of(layer: &Layer) -> Option<Result<FlowKind, OpError>> {
        let t = &layer.type_name;
        let &(kind, _, since) = FlowKind::ALL
            .iter()
            .find(|(_, name, _)| t.eq_ignore_ascii_case(name))?;
        let opset = irun_ops::registry::parse_opset(&layer.version);
        Some(match opset {
            Some(n) if n >= since => Ok(kind),
            Some(n) => Err(OpError::new(
                codes::UNKNOWN_OPSET,
                format!("{t} does not exist in opset{n}; it was introduced in opset{since}"),
            )),
            None => Err(OpError::new(
                codes::UNKNOWN_OPSET,
                format!(
                    "version \"{}\" is not an opset (OpenVINO 2026.4 reads opset1 to opset{})",
                    layer.version,
                    irun_ops::registry::NEWEST_OPSET
                ),
            )),
        })
    }

    /// The three, each with the opset that introduced it (and its only version).
    pub const ALL: [(FlowKind, &'static str, u32); 3] = [
        (FlowKind::TensorIterator, "TensorIterator", 1),
        (FlowKind::Loop, "Loop", 5),
        (FlowKind::If, "If", 8),
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Loop => "Loop-5",
            FlowKind::TensorIterator => "TensorIterator-1",
            FlowKind::If => "If-8",
        }
    }

    pub(crate) fn bodies(self) -> &'static [&'static str] {
        match self {
            FlowKind::If => &["then_body", "else_body"],
            _ => &["body"],
        }
    }
}

/// Where a body Parameter's value comes from, iteration by iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSource {
    /// Loop's current-iteration Parameter: the iteration number, in its own type and shape.
    CurrentIteration,
    /// Slice `i` of outer input `input` along `axis` (counted from the end when `reverse`),
    /// with size 1 there.
    Sliced {
        input: usize,
        axis: usize,
        reverse: bool,
    },
    /// Outer input `input` in every iteration.
    Invariant { input: usize },
    /// Outer input `input` in the first iteration, body Result `result` of the previous one
    /// after that (a back edge).
    Merged { input: usize, result: usize },
}

/// How an output of the layer comes from its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputMap {
    /// The body Result (index among the body's Results, in XML order).
    pub result: usize,
    /// `Some`: every iteration's value joined along the axis (in reverse iteration order when
    /// `reverse`); `None`: the last iteration's value.
    pub concat: Option<Joined>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Joined {
    pub axis: usize,
    pub reverse: bool,
}

/// One body and its port map, resolved to indices.
#[derive(Debug)]
pub struct Body {
    /// `body`, `then_body` or `else_body`.
    pub role: String,
    pub graph: Arc<Graph>,
    /// By body Parameter index (XML order).
    pub params: Vec<ParamSource>,
    /// By output slot of the layer.
    pub outputs: Vec<OutputMap>,
    /// Loop's condition Result: the body runs again only while its first element is true.
    pub condition: Option<usize>,
}

impl Body {
    /// The fact of body Result `r` among `facts` (the body graph's).
    pub(crate) fn result_fact(&self, facts: &[Vec<Fact>], r: usize) -> Fact {
        facts[self.graph.results[r]]
            .first()
            .cloned()
            .unwrap_or_else(Fact::unknown)
    }

    /// The declared fact of body Parameter `p`.
    pub(crate) fn declared(&self, p: usize) -> Fact {
        let mut f = self.graph.facts[self.graph.parameters[p]]
            .first()
            .cloned()
            .unwrap_or_else(Fact::unknown);
        f.value = None;
        f
    }
}

/// A Loop, TensorIterator or If: its kind and its bodies (If: then, else).
#[derive(Debug)]
pub struct ControlFlow {
    pub kind: FlowKind,
    pub bodies: Vec<Body>,
}
