//! Index broadcasts: torch's `scatter_add_(0, index.unsqueeze(1).expand(-1, d), src)` (GCN,
//! GraphSAGE and GAT aggregations) converts to a Broadcast of the `[E, 1]` indices to the
//! updates' `[E, d]`, often followed by a Convert, before the scatter: d copies of every
//! index, as many bytes as the updates or twice as many (GCN: 370 MB of i64 written, then
//! converted, per layer, 50 ms of its 120). An op that can read its input before the broadcast
//! ([`irun_ops::Op::eval_broadcast`]) gets it so: the Broadcast passes its data through (and
//! leaves its shape inputs to the run), the
//! Convert is applied to the small tensor (it commutes with a broadcast, value by value), and
//! the op reads one index per row. When the op cannot serve the shapes it meets at run time,
//! the broadcast is made after all and the op runs as usual, so results never change.
//! Only compiled executables take part, like the other preparations.

use irun_graph::NodeId;
use irun_ops::{Fact, OpError, Value};

use crate::plan::Source;
use crate::{Executable, RunError};

/// The Broadcast (and Convert) before an op's [`irun_ops::Op::broadcast_input`], held by
/// that op's node, by each ShapeOf that reads the same value, and by the Broadcast itself.
#[derive(Clone, Debug)]
pub(crate) struct IndexBroadcast {
    pub(crate) role: Role,
    broadcast: NodeId,
    /// A Convert-1 between the Broadcast and the op.
    convert: Option<NodeId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The op that reads the input before the broadcast.
    Reader,
    /// A ShapeOf of the broadcast value: its output is the broadcast's shape, computed.
    ShapeOf,
    /// The Broadcast: passes its data through and leaves its shape inputs (target shape,
    /// axes mapping) to the run, for the others to read.
    Broadcast,
}

impl Executable {
    /// Finds every op that can take its input before a broadcast and reads it, alone,
    /// through a Broadcast (and a Convert) whose shape inputs are constants; marks those to
    /// pass their data through.
    pub(crate) fn fuse_index_broadcasts(&mut self) -> Result<(), RunError> {
        for i in 0..self.plan.steps.len() {
            let n = self.plan.steps[i].node;
            if !matches!(self.plan.steps[i].source, Source::Op) || !self.runs_unfused(n) {
                continue;
            }
            let Some(slot) = self.graph.ops[n]
                .as_ref()
                .and_then(|op| op.broadcast_input())
            else {
                continue;
            };
            let Some((found, shape_readers)) = self.broadcast_into(n, slot)? else {
                continue;
            };
            self.fused[found.broadcast] = Some(0);
            self.keeps_inputs[found.broadcast] = true;
            if let Some(c) = found.convert {
                self.fused[c] = Some(0);
            }
            for (m, role) in shape_readers
                .into_iter()
                .map(|r| (r, Role::ShapeOf))
                .chain([(found.broadcast, Role::Broadcast), (n, Role::Reader)])
            {
                self.index_broadcasts[m] = Some(IndexBroadcast {
                    role,
                    ..found.clone()
                });
            }
        }
        Ok(())
    }

    /// The Broadcast, and the Convert-1 between, whose output
    /// node `n` reads through `slot`, with the ShapeOf nodes that also read it (torch's
    /// lowering slices the updates to the indices' shape); no other node may.
    #[allow(clippy::type_complexity)]
    fn broadcast_into(
        &self,
        n: NodeId,
        slot: usize,
    ) -> Result<Option<(IndexBroadcast, Vec<NodeId>)>, RunError> {
        let Some((mut at, shape_readers)) = self.producer_for(n, slot) else {
            return Ok(None);
        };
        let mut convert = None;
        if self.op_named(at) == Some("Convert-1") {
            convert = Some(at);
            match self.producer_for(at, 0) {
                Some((before, readers)) if readers.is_empty() => at = before,
                _ => return Ok(None),
            }
        }
        if !self
            .op_named(at)
            .is_some_and(|name| name.starts_with("Broadcast-"))
        {
            return Ok(None);
        }
        let found = IndexBroadcast {
            role: Role::Reader,
            broadcast: at,
            convert,
        };
        Ok(Some((found, shape_readers)))
    }

    /// Whether node `m` runs its op's own `eval`: resolved, and not folded, prepared, fused
    /// or reading before a broadcast.
    pub(crate) fn runs_unfused(&self, m: NodeId) -> bool {
        self.graph.ops[m].is_some()
            && self.folded[m].is_none()
            && self.prepared[m].is_none()
            && self.fused[m].is_none()
            && self.index_broadcasts[m].is_none()
    }

    /// The running op node whose one output `n` reads through `slot`, if every other reader
    /// is a running ShapeOf (returned too).
    pub(crate) fn producer_for(&self, n: NodeId, slot: usize) -> Option<(NodeId, Vec<NodeId>)> {
        let o = self.graph.nodes[n].inputs.get(slot).copied().flatten()?;
        let runs = |m: NodeId| self.runs_unfused(m);
        let node = &self.graph.nodes[o.node];
        if o.slot != 0 || node.consumers.len() != 1 || !runs(o.node) {
            return None;
        }
        let mut shape_readers = Vec::new();
        let mut found = false;
        for &(m, s) in &node.consumers[0] {
            if (m, s) == (n, slot) && !found {
                found = true;
            } else if s == 0
                && runs(m)
                && matches!(self.op_named(m), Some("ShapeOf-1" | "ShapeOf-3"))
            {
                shape_readers.push(m);
            } else {
                return None;
            }
        }
        found.then_some((o.node, shape_readers))
    }

    pub(crate) fn op_named(&self, n: NodeId) -> Option<&'static str> {
        self.graph.ops[n].as_ref().map(|op| op.name())
    }

    /// Runs node `n`, whose broadcast input arrived as it was before the Broadcast (and
    /// Convert) of `fused`; or, for a ShapeOf reader, gives the broadcast's shape. `held`:
    /// the shape inputs each fused Broadcast of this run left; `left`: the bytes the memory
    /// limit leaves, which a broadcast made after all must fit in (the Broadcast node, which
    /// would have been checked for it, counted none).
    pub(crate) fn run_index_broadcast(
        &self,
        n: NodeId,
        fused: &IndexBroadcast,
        mut args: Vec<Value>,
        held: &[(NodeId, Vec<Value>)],
        left: u64,
    ) -> Result<Vec<Value>, OpError> {
        let op = self.graph.ops[n]
            .as_ref()
            .expect("plan has only resolved ops");
        let broadcast = self.graph.ops[fused.broadcast]
            .as_ref()
            .expect("fused only when resolved");
        let shape_of = fused.role == Role::ShapeOf;
        let slot = if shape_of {
            0
        } else {
            op.broadcast_input()
                .expect("fused only for ops that have one")
        };
        if let Some(c) = fused.convert.filter(|_| !shape_of) {
            let convert = self.graph.ops[c]
                .as_ref()
                .expect("fused only when resolved");
            let small = convert
                .eval(vec![args[slot].clone()])
                .map_err(|e| self.in_fused(c, e))?;
            args[slot] = single(small).map_err(|e| self.in_fused(c, e))?;
        }
        let shape_inputs = kept_inputs(held, fused.broadcast)?;
        let mut broadcast_inputs = vec![args[slot].clone()];
        broadcast_inputs.extend(shape_inputs.iter().cloned());
        let to = broadcast_shape(broadcast.as_ref(), &broadcast_inputs);
        match (&to, shape_of) {
            (Some(to), true) => {
                // ShapeOf's own inference knows its value from a static shape.
                let fact = Fact::of_static(args[0].element_type(), to);
                let value = op.infer(&[fact]).ok().and_then(|mut f| f.pop()?.value);
                if let Some(value) = value {
                    return Ok(vec![value]);
                }
            }
            (Some(to), false) => {
                if let Some(out) = op.eval_broadcast(&mut args, to)? {
                    return Ok(out);
                }
            }
            (None, _) => {}
        }
        let elem_bytes = args[slot].element_type().bit_width().div_ceil(8);
        let need = to.as_ref().map_or(0, |to| {
            to.iter()
                .fold(elem_bytes, |bytes, &d| bytes.saturating_mul(d as u64))
        });
        if need > left {
            return Err(self.in_fused(
                fused.broadcast,
                OpError::new(
                    irun_ops::codes::MEMORY,
                    format!(
                        "its output needs {need} bytes, {left} are left under the memory limit"
                    ),
                ),
            ));
        }
        let full = broadcast
            .eval(broadcast_inputs)
            .map_err(|e| self.in_fused(fused.broadcast, e))?;
        args[slot] = single(full).map_err(|e| self.in_fused(fused.broadcast, e))?;
        op.eval(args)
    }

    /// An error of fused node `m`, reported on the node that ran it: says which layer.
    fn in_fused(&self, m: NodeId, mut e: OpError) -> OpError {
        let layer = self.graph.layer(m);
        e.message = format!(
            "in layer {} (\"{}\", run with this one): {}",
            layer.id, layer.name, e.message
        );
        e
    }
}

/// The shape a Broadcast op gives `inputs` (data, then its shape inputs), by its own
/// inference on these very values; `None` where inference fails or leaves it open.
fn broadcast_shape(broadcast: &dyn irun_ops::Op, inputs: &[Value]) -> Option<Vec<usize>> {
    let facts: Vec<Fact> = inputs
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let fact = Fact::of_static(v.element_type(), v.shape());
            if i == 0 {
                fact
            } else {
                fact.with_value((**v).clone())
            }
        })
        .collect();
    let out = broadcast.infer(&facts).ok()?;
    out.first()?.shape.to_static()
}

/// The other inputs passed-through node `m` kept in this run (`held`, in run order).
pub(crate) fn kept_inputs(held: &[(NodeId, Vec<Value>)], m: NodeId) -> Result<&[Value], OpError> {
    held.iter()
        .find(|(k, _)| *k == m)
        .map(|(_, v)| v.as_slice())
        .ok_or_else(|| OpError::new(irun_ops::codes::INTERNAL, "a fused node did not run first"))
}

/// The one value of an op's outputs.
pub(crate) fn single(mut values: Vec<Value>) -> Result<Value, OpError> {
    match (values.pop(), values.is_empty()) {
        (Some(v), true) => Ok(v),
        _ => Err(OpError::new(
            irun_ops::codes::INTERNAL,
            "a fused kernel returned other than one output",
        )),
    }
}

impl Executable {
    /// How many ops read an input as it was before a Broadcast that then never runs.
    pub fn broadcasts_elided(&self) -> usize {
        self.index_broadcasts
            .iter()
            .flatten()
            .filter(|f| f.role == Role::Reader)
            .count()
    }
}
