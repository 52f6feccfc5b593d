//! Running the loop-invariant part of a TensorIterator's or Loop's body once, for every
//! iteration together, before the loop.
//!
//! A recurrent body usually projects its slice of the sequence before it mixes in the state
//! (`tanh(x_t W + b + h U)`): the nodes that read only the sliced inputs and constants do
//! not depend on the previous iteration. Run per iteration they are many small products
//! (`[16, 256] x [256, 256]`, 128 times); run once on the slices stacked along a new leading
//! axis they are one product (`[2048, 256] x [256, 256]`), which the GEMM runs near its
//! peak. Each iteration then receives its row of the stacked values in place of those nodes
//! ([`crate::plan::Plan::give`]).
//!
//! Only ops whose value on the stacked operands is, row for row, their value per iteration
//! take part: Squeeze, Unsqueeze and Reshape (the stacked output is the input under the
//! per-iteration output shape after the leading axis), f32 elementwise ops (a constant
//! operand broadcasts from the right, so the leading axis leaves its alignment alone) and
//! MatMul by a constant matrix with more than one row per iteration, with the epilogue the
//! executor would fuse into it ([`Executable::chain_after`]): the stacked rows are more rows
//! of one product, each output element the same sum in the same order as the prepared
//! kernel makes per iteration (its depth blocks follow k alone), so the results do not
//! change by a bit. One row per iteration would be a vector product, summed in another
//! order, so such a product stays in the loop.

use std::collections::HashMap;
use std::sync::Arc;

use irun_graph::control_flow::{Body, FlowKind, ParamSource};
use irun_graph::{Graph, NodeId};
use irun_ops::{codes, Fact, Op, OpError, Prepared, Value};
use irun_tensor::{ElementType, Tensor};

use crate::{Executable, Options, RunError};

/// Unary f32 ops that map each element on its own.
const UNARY: &[&str] = &[
    "Abs-1",
    "Ceiling-1",
    "Clamp-1",
    "Cos-1",
    "Elu-1",
    "Erf-1",
    "Exp-1",
    "Floor-1",
    "Gelu-2",
    "Gelu-7",
    "HSigmoid-5",
    "HSwish-4",
    "Log-1",
    "Negative-1",
    "ReLU-1",
    "Sigmoid-1",
    "Sin-1",
    "SoftPlus-4",
    "Sqrt-1",
    "Tanh-1",
];

/// Binary ops that map each pair of elements on its own, under numpy broadcasting.
const BINARY: &[&str] = &[
    "Add-1",
    "Subtract-1",
    "Multiply-1",
    "Divide-1",
    "Maximum-1",
    "Minimum-1",
    "Power-1",
    "SquaredDifference-1",
];

/// The largest placeholder (in elements) for a sliced Parameter that only hoisted nodes read.
const PLACEHOLDER_MAX_ELEMENTS: usize = 1 << 20;

/// Where a hoisted node's operand comes from.
#[derive(Debug)]
enum Operand {
    /// The slices of body Parameter `p`, stacked.
    Sliced(usize),
    /// Another hoisted node's stacked value.
    Node(NodeId),
    /// A constant, the same in every iteration.
    Constant(Value),
}

#[derive(Debug)]
enum Kind {
    /// Squeeze, Unsqueeze, Reshape: the values under the per-iteration output shape.
    Reshape,
    /// An elementwise op, evaluated on the stacked operands as they are.
    Map,
    /// MatMul of a stacked `[.., m, k]` by a constant matrix, evaluated as one
    /// `[t * .. * m, k]` product by the prepared kernel (which packed the matrix once and
    /// applies the fused epilogue).
    Rows(Box<dyn Prepared>),
    /// An op that the product before it applies: its operand `slot`, passed through.
    Fused(usize),
}

/// One node of the loop-invariant part.
#[derive(Debug)]
struct Step {
    node: NodeId,
    kind: Kind,
    operands: Vec<Operand>,
    /// The node's static per-iteration output shape.
    shape: Vec<usize>,
}

/// A body's loop-invariant part and the body compiled to receive its values.
#[derive(Debug)]
pub(crate) struct Hoisted {
    /// The hoisted nodes in body order.
    steps: Vec<Step>,
    /// The hoisted nodes that the rest of the body reads, in the order the body receives
    /// their values after its Parameters.
    given: Vec<NodeId>,
    /// The sliced Parameters the steps read, with their static per-iteration shapes.
    sliced: Vec<(usize, Vec<usize>)>,
    /// A placeholder for each sliced Parameter that only hoisted nodes read, by Parameter
    /// (the body still takes a value for it; nothing reads it).
    pub(crate) unread: Vec<Option<Value>>,
    /// The body without the hoisted nodes.
    pub(crate) exe: Executable,
}

/// What stands in the way of hoisting (for the tests; users see no difference).
pub(crate) type Refusal = &'static str;

impl Hoisted {
    /// The loop-invariant part of `body` (compiled as `exe`) and the body compiled without
    /// it, or why there is none: the part must hold a MatMul (elementwise ops alone do not
    /// pay for moving their values), and a Loop's condition must be constant true, so that
    /// every iteration the slices allow runs.
    pub(crate) fn build(
        kind: FlowKind,
        body: &Body,
        exe: &Executable,
        options: &Options,
        pool: &Arc<rayon::ThreadPool>,
    ) -> Result<Result<Hoisted, Refusal>, RunError> {
        if kind == FlowKind::Loop && !constant_true(body, exe)? {
            return Ok(Err(
                "the Loop's condition may stop it before the slices end",
            ));
        }
        let steps = match find(body, exe)? {
            Ok(steps) => steps,
            Err(why) => return Ok(Err(why)),
        };
        let g = &*body.graph;
        let hoisted = |m: NodeId| steps.iter().any(|s| s.node == m);
        let read_outside = |n: NodeId| {
            g.nodes[n]
                .consumers
                .iter()
                .flatten()
                .any(|&(m, _)| !hoisted(m))
        };
        let given: Vec<NodeId> = steps
            .iter()
            .map(|s| s.node)
            .filter(|&n| read_outside(n))
            .collect();
        let mut sliced: Vec<(usize, Vec<usize>)> = Vec::new();
        for step in &steps {
            for o in &step.operands {
                if let Operand::Sliced(p) = *o {
                    if !sliced.iter().any(|(q, _)| *q == p) {
                        sliced.push((p, static_shape(g, g.parameters[p]).expect("found so")));
                    }
                }
            }
        }
        // A placeholder is made once, here, so only where it is small; a larger slice is
        // cut for each iteration as before, though nothing reads it.
        let mut unread: Vec<Option<Value>> = vec![None; body.params.len()];
        for (p, shape) in &sliced {
            let elements = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if elements.is_some_and(|e| e <= PLACEHOLDER_MAX_ELEMENTS)
                && !read_outside(g.parameters[*p])
            {
                unread[*p] = Tensor::zeros(ElementType::F32, shape.clone())
                    .ok()
                    .map(Arc::new);
            }
        }
        let Ok(exe) =
            Executable::compile_given(body.graph.clone(), options, Some(pool.clone()), &given)
        else {
            return Ok(Err(
                "the body without its loop-invariant part does not compile",
            ));
        };
        Ok(Ok(Hoisted {
            steps,
            given,
            sliced,
            unread,
            exe,
        }))
    }

    /// The hoisted nodes' values for `count` iterations, computed at once from the outer
    /// inputs `args`; `None` when the loop is not one this part was made for (fewer slices
    /// than iterations, slices of other shapes, fewer than two iterations), or when the
    /// stacked values would hold more than `budget` bytes.
    pub(crate) fn run(
        &self,
        body: &Body,
        args: &[Value],
        count: u64,
        budget: u64,
    ) -> Result<Option<Stacked>, (NodeId, OpError)> {
        let Some(t) = usize::try_from(count).ok().filter(|&t| t >= 2) else {
            return Ok(None);
        };
        let per_iteration: u64 = self
            .steps
            .iter()
            .map(|s| {
                s.shape
                    .iter()
                    .fold(4u64, |a, &d| a.saturating_mul(d as u64))
            })
            .fold(0u64, u64::saturating_add);
        if per_iteration.saturating_mul(count.saturating_mul(2)) > budget {
            return Ok(None);
        }
        let mut stacked_params: HashMap<usize, Value> = HashMap::new();
        for (p, shape) in &self.sliced {
            let ParamSource::Sliced {
                input,
                axis,
                reverse,
            } = body.params[*p]
            else {
                unreachable!("only sliced Parameters are recorded")
            };
            let data = &args[input];
            let mut slice = data.shape().to_vec();
            match slice.get_mut(axis) {
                Some(d) if *d >= t => *d = 1,
                _ => return Ok(None),
            }
            if slice != *shape {
                return Ok(None);
            }
            let value = stack(data, axis, reverse, t).map_err(|e| (self.steps[0].node, e))?;
            stacked_params.insert(*p, value);
        }
        let mut stacked: HashMap<NodeId, Value> = HashMap::new();
        for step in &self.steps {
            let operands: Vec<Value> = step
                .operands
                .iter()
                .map(|o| match o {
                    Operand::Sliced(p) => stacked_params[p].clone(),
                    Operand::Node(m) => stacked[m].clone(),
                    Operand::Constant(v) => v.clone(),
                })
                .collect();
            let op = self.exe.graph.ops[step.node]
                .as_ref()
                .expect("hoisted nodes have ops");
            let value = evaluate(step, t, op.as_ref(), operands).map_err(|e| (step.node, e))?;
            stacked.insert(step.node, value);
        }
        let given = self
            .given
            .iter()
            .map(|node| {
                let step = self.steps.iter().find(|s| s.node == *node).expect("given");
                (*node, stacked[node].clone(), step.shape.clone())
            })
            .collect();
        Ok(Some(Stacked { given }))
    }
}

/// The static shape of node `n`'s one f32 output.
fn static_shape(g: &Graph, n: NodeId) -> Option<Vec<usize>> {
    match &g.facts[n][..] {
        [f] if f.ty == ElementType::F32 => f.shape.to_static(),
        _ => None,
    }
}

/// The nodes of `body` whose values depend on nothing but the sliced Parameters and
/// constants, in body order, as far as their ops take part (see the module doc).
fn find(body: &Body, exe: &Executable) -> Result<Result<Vec<Step>, Refusal>, RunError> {
    let g = &*body.graph;
    let mut sliced_params: HashMap<NodeId, usize> = HashMap::new();
    for (p, source) in body.params.iter().enumerate() {
        let node = g.parameters[p];
        if matches!(source, ParamSource::Sliced { .. }) && static_shape(g, node).is_some() {
            sliced_params.insert(node, p);
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    // Ops that a hoisted product applies, with the operand each passes through.
    let mut fused: HashMap<NodeId, usize> = HashMap::new();
    for &n in &g.order {
        let Some(op) = g.ops[n].as_ref() else {
            continue;
        };
        let Some(shape) = static_shape(g, n) else {
            continue;
        };
        if g.flows[n].is_some() || exe.folded[n].is_some() || g.layer(n).type_name == "Const" {
            continue;
        }
        // Each operand, and whether it is stacked (else constant) with its per-iteration
        // shape.
        let mut operands = Vec::new();
        let mut shapes = Vec::new();
        for o in g.nodes[n].inputs.iter().flatten() {
            if let Some(&p) = sliced_params.get(&o.node) {
                operands.push(Operand::Sliced(p));
                shapes.push((true, static_shape(g, o.node).expect("checked")));
            } else if let Some(s) = steps.iter().find(|s| s.node == o.node) {
                operands.push(Operand::Node(o.node));
                shapes.push((true, s.shape.clone()));
            } else if let Some(v) = exe.constant_input(o.node, o.slot)? {
                shapes.push((false, v.shape().to_vec()));
                operands.push(Operand::Constant(v));
            } else {
                break;
            }
        }
        let takes_part =
            operands.len() == g.nodes[n].inputs.len() && shapes.iter().any(|(s, _)| *s);
        let kind = if !takes_part {
            None
        } else if let Some(&slot) = fused.get(&n) {
            Some(Kind::Fused(slot))
        } else {
            kind_of(exe, n, op.as_ref(), &operands, &shapes, shape.len())?
        };
        let Some(kind) = kind else {
            if fused.contains_key(&n) {
                // The product before it already applies it, so it must be hoisted with it.
                return Ok(Err(
                    "an op fused into a hoisted product reads a value per iteration",
                ));
            }
            continue;
        };
        let kind = match kind {
            Kind::Rows(mut kernel) => {
                let (epilogue, chain) = exe.chain_after(n)?;
                if epilogue.is_empty() || kernel.set_epilogue(&epilogue) {
                    fused.extend(chain);
                }
                Kind::Rows(kernel)
            }
            kind => kind,
        };
        steps.push(Step {
            node: n,
            kind,
            operands,
            shape,
        });
    }
    if !steps.iter().any(|s| matches!(s.kind, Kind::Rows(_))) {
        return Ok(Err(
            "no MatMul by a constant reads only the sliced inputs and constants",
        ));
    }
    Ok(Ok(steps))
}

/// How node `n` (op `op`, with its output's per-iteration `rank`) runs on stacked operands,
/// if it can.
fn kind_of(
    exe: &Executable,
    n: NodeId,
    op: &dyn Op,
    operands: &[Operand],
    shapes: &[(bool, Vec<usize>)],
    rank: usize,
) -> Result<Option<Kind>, RunError> {
    let ranks: Vec<(bool, usize)> = shapes.iter().map(|(s, d)| (*s, d.len())).collect();
    let g = &*exe.graph;
    let layer = g.layer(n);
    let name = op.name();
    let numpy = crate::fuse::broadcasts_numpy(layer);
    let stacked_first = ranks[0].0 && !ranks[1..].iter().any(|&(s, _)| s);
    Ok(match name {
        "Squeeze-1" | "Unsqueeze-1" | "Reshape-1" if stacked_first => Some(Kind::Reshape),
        _ if UNARY.contains(&name) && ranks.len() == 1 => Some(Kind::Map),
        // Stacked operands of the output's rank gain the leading axis in the same place;
        // constants of at most that rank broadcast as before.
        _ if BINARY.contains(&name)
            && numpy
            && ranks
                .iter()
                .all(|&(s, r)| if s { r == rank } else { r <= rank }) =>
        {
            Some(Kind::Map)
        }
        // One row per iteration is a vector product, which the kernels sum in another order
        // than rows of a matrix product: stacked, its bits would change.
        "MatMul-1"
            if stacked_first
                && ranks.len() == 2
                && ranks[0].1 == rank
                && rank >= 2
                && ranks[1].1 == 2
                && shapes[0].1[rank - 2] > 1 =>
        {
            let transpose_a = irun_ops::attrs::AttrReader::new(layer).bool_or("transpose_a", true);
            let b = g.nodes[n].inputs[1].expect("every input is fed");
            // A decompressed weight (Convert, Multiply) runs in another kernel's numerics.
            if transpose_a != Ok(false) || g.layer(b.node).type_name != "Const" {
                return Ok(None);
            }
            let facts: Vec<Fact> = g.nodes[n]
                .inputs
                .iter()
                .flatten()
                .map(|o| {
                    g.facts[o.node]
                        .get(o.slot)
                        .cloned()
                        .unwrap_or_else(Fact::unknown)
                })
                .collect();
            let constants: Vec<Option<Value>> = operands
                .iter()
                .map(|o| match o {
                    Operand::Constant(v) => Some(v.clone()),
                    _ => None,
                })
                .collect();
            op.prepare(&facts, &constants).map(Kind::Rows)
        }
        _ => None,
    })
}

/// Whether a Loop body's condition Result is a constant true (or there is none).
fn constant_true(body: &Body, exe: &Executable) -> Result<bool, RunError> {
    let Some(r) = body.condition else {
        return Ok(true);
    };
    let g = &*body.graph;
    let Some(o) = g.nodes[g.results[r]].inputs.first().copied().flatten() else {
        return Ok(false);
    };
    Ok(exe
        .constant_input(o.node, o.slot)?
        .and_then(|v| v.to_i64_vec())
        .is_some_and(|v| v.len() == 1 && v[0] != 0))
}

/// A hoisted node's value for all `t` iterations, `[t, *step.shape]`.
fn evaluate(
    step: &Step,
    t: usize,
    op: &dyn Op,
    mut operands: Vec<Value>,
) -> Result<Value, OpError> {
    let mut out_shape = vec![t];
    out_shape.extend_from_slice(&step.shape);
    match &step.kind {
        Kind::Reshape => reshaped(&operands[0], out_shape),
        Kind::Map => Ok(op.eval(operands)?.remove(0)),
        Kind::Fused(slot) => Ok(operands.swap_remove(*slot)),
        Kind::Rows(kernel) => {
            let a = &operands[0];
            let k = *a.shape().last().expect("rank checked");
            let rows = a.shape().iter().product::<usize>() / k.max(1);
            operands[0] = reshaped(a, vec![rows, k])?;
            reshaped(&kernel.eval(operands)?.remove(0), out_shape)
        }
    }
}

fn reshaped(v: &Value, shape: Vec<usize>) -> Result<Value, OpError> {
    v.with_shape(shape)
        .map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// The first `t` slices of `data` along `axis` (from the end when `reverse`) as one value
/// with a new leading axis: `data` itself, reshaped, when it is sliced forward along its
/// first axis.
fn stack(data: &Value, axis: usize, reverse: bool, t: usize) -> Result<Value, OpError> {
    let mut shape = vec![t];
    shape.extend_from_slice(data.shape());
    shape[axis + 1] = 1;
    let d = data.shape()[axis];
    if axis == 0 && !reverse && d == t {
        return reshaped(data, shape);
    }
    let mut parts = irun_ops::movement::split::cut(data, axis, &vec![1; d], "TensorIterator")?;
    if reverse {
        parts.reverse();
    }
    parts.truncate(t);
    let concat = irun_ops::movement::concat::Concat { axis: 0 };
    let joined = concat.eval(parts)?.remove(0);
    reshaped(&joined, shape)
}

/// The hoisted nodes' values for every iteration: `[t, *shape]` each, in the order the body
/// receives them.
pub(crate) struct Stacked {
    /// Each given node, its stacked value and its per-iteration shape.
    given: Vec<(NodeId, Value, Vec<usize>)>,
}

impl Stacked {
    /// Iteration `i`'s values, copied out as it starts: the copies of one iteration are
    /// freed before the next, so they reuse the same memory.
    pub(crate) fn row(&self, i: usize) -> Result<Vec<Value>, (NodeId, OpError)> {
        self.given
            .iter()
            .map(|(node, value, shape)| row_of(value, shape, i).map_err(|e| (*node, e)))
            .collect()
    }
}

/// Row `i` of the stacked f32 `value`, a value of `shape`.
fn row_of(value: &Value, shape: &[usize], i: usize) -> Result<Value, OpError> {
    let values = value.values::<f32>().ok_or_else(|| {
        OpError::new(
            codes::INTERNAL,
            "internal error: a hoisted value is not f32",
        )
    })?;
    let len = shape.iter().product::<usize>();
    let row = values.get(i * len..(i + 1) * len).ok_or_else(|| {
        OpError::new(
            codes::INTERNAL,
            format!("internal error: a hoisted value has no row {i}"),
        )
    })?;
    Tensor::from_f32(shape.to_vec(), row.to_vec())
        .map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}
