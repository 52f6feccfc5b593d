//! Epilogue fusion: an Add of a per-channel f32 constant and/or a ReLU or HSwish after a
//! prepared kernel that takes them (MatMul, Convolution, the transposed convolutions,
//! GroupNormalization), each the single reader of the value before it, are applied
//! by the kernel as it writes its output ([`irun_ops::Epilogue`]), and so is a ReduceMax
//! over the rows of each output matrix after them, where the kernel can
//! ([`irun_ops::Prepared::set_row_max`]: the prepared MatMul); the fused nodes then pass
//! their input through unchanged, and the kernel's output is checked against the
//! ReduceMax's facts. The graph's results are bit for bit the same: the kernel
//! computes what the ops would, element by element. A kernel whose one reader (after its
//! epilogue) is a prepared kernel that takes its input channel-last writes its output so
//! ([`irun_ops::Prepared::set_channels_last_output`]), checked against its facts so moved.
//! Only compiled preparations take part, so `irun run` (which does not prepare) runs every
//! op itself.

use irun_graph::NodeId;
use irun_ops::epilogue::Residual;
use irun_ops::{Activation, Epilogue, Value};
use irun_tensor::ElementType;

use crate::plan::Source;
use crate::{Executable, RunError};

impl Executable {
    /// Offers each prepared kernel the chain of ops after it that it could apply, and marks
    /// the ops it takes over in `self.fused` (the input slot each passes through).
    pub(crate) fn fuse_epilogues(&mut self) -> Result<(), RunError> {
        for i in 0..self.plan.steps.len() {
            let step = &self.plan.steps[i];
            let n = step.node;
            if !matches!(step.source, Source::Op)
                || self.prepared[n].is_none()
                || self.folded[n].is_some()
            {
                continue;
            }
            let (epilogue, fused) = self.chain_after(n)?;
            let kernel = self.prepared[n].as_mut().expect("checked");
            if !epilogue.is_empty() && !kernel.set_epilogue(&epilogue) {
                continue;
            }
            let mut last = fused.last().map_or(n, |&(m, _)| m);
            for (m, slot) in fused {
                self.fused[m] = Some(slot);
            }
            if let Some((m, q)) = self.fake_quantize_after(last)? {
                let kernel = self.prepared[n].as_mut().expect("checked");
                if kernel.set_output_quantize(&q) {
                    self.fused[m] = Some(0);
                    last = m;
                }
            }
            if let Some(end) = self.take_residual(n, last)? {
                last = end;
            }
            if let Some((m, keep_dims)) = self.row_max_after(n, last)? {
                let kernel = self.prepared[n].as_mut().expect("checked");
                if kernel.set_row_max(keep_dims) {
                    self.fused[m] = Some(0);
                    self.reduced_into[n] = Some(m);
                    continue;
                }
            }
            self.hand_over_channels_last(n, last);
        }
        Ok(())
    }

    /// Offers kernel `n` the residual connection after `last` (the end of what it already
    /// applies): an Add-1 that is `last`'s one reader, of another value of the same type
    /// and shape computed before `n` runs, then a ReLU-1 and a FakeQuantize-1 where each is
    /// the one reader of the value before it. Where the kernel takes it, `n` reads the other
    /// value as one more input and the three pass their input through; the last of them.
    fn take_residual(&mut self, n: NodeId, last: NodeId) -> Result<Option<NodeId>, RunError> {
        let Some((add, slot)) = self.only_reader(last) else {
            return Ok(None);
        };
        let inputs = &self.graph.nodes[add].inputs;
        let other = match (slot, inputs.as_slice()) {
            (0, [_, Some(o)]) | (1, [Some(o), _]) => *o,
            _ => return Ok(None),
        };
        let other_fact = &self.graph.facts[other.node][other.slot];
        let last_fact = &self.graph.facts[last][0];
        let other_outlet = self.plan.outlet(other.node, other.slot);
        if self.op_name(add) != Some("Add-1")
            || !self.same_fact(add, last)
            || (other_fact.ty, &other_fact.shape) != (last_fact.ty, &last_fact.shape)
            || self.plan.readers[self.plan.outlet(last, 0)] != 1
            || !self.plan.runs_before(other_outlet, n)
        {
            return Ok(None);
        }
        let mut end = add;
        let mut passed = vec![add];
        let relu = match self.only_reader(add) {
            Some((m, 0)) if self.op_name(m) == Some("ReLU-1") && self.same_fact(m, add) => {
                end = m;
                passed.push(m);
                true
            }
            _ => false,
        };
        let quantize = match self.fake_quantize_after(end)? {
            Some((m, ranges)) => {
                end = m;
                passed.push(m);
                ranges
            }
            None => Vec::new(),
        };
        let residual = Residual { relu, quantize };
        let kernel = self.prepared[n].as_mut().expect("the caller checked");
        if !kernel.set_residual(&residual) {
            return Ok(None);
        }
        self.plan.add_input(n, other_outlet);
        self.plan.keep_inputs(add, &[slot]);
        for m in passed {
            self.fused[m] = Some(0);
        }
        Ok(Some(end))
    }

    /// Has `n` write its output channel-last for the one prepared kernel that reads it
    /// (after `last`, the end of `n`'s epilogue chain), where both can: the pair then skips
    /// the reader's own move of the values (ROIAlign's image: a read and a write of the
    /// whole feature map).
    fn hand_over_channels_last(&mut self, n: NodeId, last: NodeId) {
        let Some((m, slot)) = self.only_reader(last) else {
            return;
        };
        let rank = self.graph.facts[n][0].shape.rank();
        if self.fused[m].is_some() || self.prepared[m].is_none() || rank.is_none_or(|r| r < 3) {
            return;
        }
        let producer = self.prepared[n].as_mut().expect("the caller checked");
        if !producer.set_channels_last_output(true) {
            return;
        }
        let reader = self.prepared[m].as_mut().expect("checked");
        if reader.set_channels_last_input(slot) {
            self.channels_last_out[n] = true;
        } else {
            let producer = self.prepared[n].as_mut().expect("the caller checked");
            producer.set_channels_last_output(false);
        }
    }

    /// The single-reader ReduceMax-1 after `last` (the end of `n`'s epilogue chain, or `n`)
    /// that takes the maximum over dim -2 of `n`'s output alone, with its `keep_dims`.
    fn row_max_after(&self, n: NodeId, last: NodeId) -> Result<Option<(NodeId, bool)>, RunError> {
        let Some((m, 0)) = self.only_reader(last) else {
            return Ok(None);
        };
        let rank = self.graph.facts[n][0].shape.rank();
        if self.op_name(m) != Some("ReduceMax-1") || rank.is_none_or(|r| r < 2) {
            return Ok(None);
        }
        let rank = rank.expect("checked") as i64;
        let axes = self.graph.nodes[m].inputs.get(1).copied().flatten();
        let Some(c) = axes.filter(|o| o.slot == 0).map(|o| o.node) else {
            return Ok(None);
        };
        if self.graph.layer(c).type_name != "Const" {
            return Ok(None);
        }
        let axes = self.constant(c, self.memory_limit)?;
        let axis = match (axes.values::<i64>(), axes.values::<i32>()) {
            (Some(&[a]), _) => a,
            (_, Some(&[a])) => i64::from(a),
            _ => return Ok(None),
        };
        if axis.rem_euclid(rank) != rank - 2 || !(-rank..rank).contains(&axis) {
            return Ok(None);
        }
        let keep_dims =
            irun_ops::attrs::AttrReader::new(self.graph.layer(m)).bool_or("keep_dims", false);
        Ok(keep_dims.ok().map(|k| (m, k)))
    }

    /// The epilogue that the single-reader Add (of a constant varying along one dim) and ReLU
    /// after `n` make (empty when there are none), with those nodes and the slot each passes
    /// through.
    pub(crate) fn chain_after(
        &self,
        n: NodeId,
    ) -> Result<(Epilogue, Vec<(NodeId, usize)>), RunError> {
        let mut epilogue = Epilogue::default();
        let mut fused = Vec::new();
        let mut at = n;
        if let Some((m, slot)) = self.only_reader(at) {
            if let Some((bias, axis)) = self.bias_of(m, slot, at)? {
                epilogue.bias = Some(bias);
                epilogue.bias_axis_from_end = axis;
                fused.push((m, slot));
                at = m;
            }
        }
        if let Some((m, 0)) = self.only_reader(at) {
            let activation = match self.op_name(m) {
                Some("ReLU-1") => Activation::Relu,
                Some("HSwish-4") => Activation::HSwish,
                _ => Activation::None,
            };
            if activation != Activation::None && self.same_fact(m, at) {
                epilogue.activation = activation;
                fused.push((m, 0));
            }
        }
        Ok((epilogue, fused))
    }

    /// The one reader of node `n`'s one f32 output, and the slot it reads it through.
    fn only_reader(&self, n: NodeId) -> Option<(NodeId, usize)> {
        let facts = &self.graph.facts[n];
        if facts.len() != 1 || facts[0].ty != ElementType::F32 {
            return None;
        }
        match self.graph.nodes[n].consumers.first().map(Vec::as_slice) {
            Some(&[(m, slot)]) if self.folded[m].is_none() => Some((m, slot)),
            _ => None,
        }
    }

    /// For node `m`, an Add-1 (numpy broadcasting) reading `n` through `slot` and a Const
    /// through the other slot, with the output as `n`'s: the constant's f32 values and the
    /// dim (from the last) along which they vary, when they vary along at most one.
    fn bias_of(
        &self,
        m: NodeId,
        slot: usize,
        n: NodeId,
    ) -> Result<Option<(Vec<f32>, usize)>, RunError> {
        if self.op_name(m) != Some("Add-1") || slot > 1 || !self.same_fact(m, n) {
            return Ok(None);
        }
        let numpy = broadcasts_numpy(self.graph.layer(m));
        let other = self.graph.nodes[m].inputs.get(1 - slot).copied().flatten();
        let Some(c) = other.filter(|o| o.slot == 0).map(|o| o.node) else {
            return Ok(None);
        };
        if !numpy || self.graph.layer(c).type_name != "Const" {
            return Ok(None);
        }
        let value: Value = self.constant(c, self.memory_limit)?;
        let out_rank = self.graph.facts[n][0].shape.rank();
        let (Some(values), Some(out_rank)) = (value.values::<f32>(), out_rank) else {
            return Ok(None);
        };
        let shape = value.shape();
        if shape.len() > out_rank {
            return Ok(None);
        }
        let varying: Vec<usize> = (0..shape.len())
            .filter(|&d| shape[d] != 1)
            .map(|d| shape.len() - 1 - d)
            .collect();
        Ok(match varying[..] {
            [] => Some((values.to_vec(), 0)),
            [axis] => Some((values.to_vec(), axis)),
            _ => None,
        })
    }

    fn op_name(&self, m: NodeId) -> Option<&'static str> {
        self.graph.ops[m].as_ref().map(|op| op.name())
    }

    /// Whether `m`'s one output has `n`'s type and shape as inferred.
    fn same_fact(&self, m: NodeId, n: NodeId) -> bool {
        match (&self.graph.facts[m][..], &self.graph.facts[n][..]) {
            ([a], [b]) => a.ty == b.ty && a.shape == b.shape,
            _ => false,
        }
    }
}

/// Whether an elementwise layer broadcasts numpy-style: its `auto_broadcast` is `numpy` (in
/// any case) or absent, the default of the binary ops.
pub(crate) fn broadcasts_numpy(layer: &irun_ir::Layer) -> bool {
    layer.data.as_ref().is_none_or(|d| {
        d.attrs
            .iter()
            .all(|a| a.name != "auto_broadcast" || a.value.eq_ignore_ascii_case("numpy"))
    })
}
