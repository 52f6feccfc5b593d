//! Epilogue fusion: an Add of a per-channel f32 constant and/or a ReLU or HSwish after a prepared GEMM
//! kernel (MatMul, Convolution), each the single reader of the value before it, are applied
//! by the kernel as it writes its output ([`irun_ops::Epilogue`]); the fused nodes then pass
//! their input through unchanged. The graph's results are bit for bit the same: the kernel
//! computes what the ops would, element by element. Only compiled preparations take part,
//! so `irun run` (which does not prepare) runs every op itself.

use irun_graph::NodeId;
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
            let Some((epilogue, fused)) = self.chain_after(n)? else {
                continue;
            };
            let kernel = self.prepared[n].as_mut().expect("checked");
            if kernel.set_epilogue(&epilogue) {
                for (m, slot) in fused {
                    self.fused[m] = Some(slot);
                }
            }
        }
        Ok(())
    }

    /// The epilogue that the single-reader Add (of a constant varying along one dim) and ReLU
    /// after `n` make, with those nodes and the slot each passes through.
    #[allow(clippy::type_complexity)]
    fn chain_after(&self, n: NodeId) -> Result<Option<(Epilogue, Vec<(NodeId, usize)>)>, RunError> {
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
        Ok((!epilogue.is_empty()).then_some((epilogue, fused)))
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
        let numpy = self.graph.layer(m).data.as_ref().is_none_or(|d| {
            d.attrs
                .iter()
                .all(|a| a.name != "auto_broadcast" || a.value.eq_ignore_ascii_case("numpy"))
        });
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
