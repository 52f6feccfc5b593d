//! Compile-time folding of the constant subgraphs that inference leaves to run time for
//! their size: above all the decompression of weights that OpenVINO writes as f16 (its
//! default `compress_to_fp16`) or u8 with a scale, `Const -> Convert [-> Subtract ->
//! Multiply]` in front of every Convolution and MatMul. Run every inference, those Converts
//! cost as much as the layers they feed (4.5 ms for a 512-channel 3x3 filter against a
//! 1 ms convolution), and the layers never saw their filters as constants, so nothing was
//! packed for them either.

use irun_graph::NodeId;
use irun_ops::Value;

use crate::plan::Source;
use crate::{Executable, RunError};

/// A node is folded when its outputs take at most this many times the bytes of its constant
/// inputs: an f16 Convert doubles, a u8 one quadruples, while a Broadcast of a constant (the
/// zeros of a KV cache's initial value) may grow without bound and is left to run time.
const MAX_GROWTH: u64 = 4;

impl Executable {
    /// The value of input `o` of a node when it is a constant: a Const, or a node folded
    /// before (by inference or [`Executable::fold_constants`]).
    pub(crate) fn constant_input(
        &self,
        node: NodeId,
        slot: usize,
    ) -> Result<Option<Value>, RunError> {
        if self.graph.layer(node).type_name == "Const" {
            return self.constant(node, self.memory_limit).map(Some);
        }
        Ok(self.folded[node]
            .as_ref()
            .and_then(|v| v.get(slot).cloned()))
    }

    /// Evaluates, in model order, every op whose inputs are all constant and whose outputs
    /// stay within [`MAX_GROWTH`] of them, while all values folded here hold at most a
    /// quarter of the memory limit. A kernel error leaves the node to run time, which
    /// reports it.
    pub(crate) fn fold_constants(&mut self) -> Result<(), RunError> {
        let budget = self.memory_limit / 4;
        let mut total: u64 = 0;
        for i in 0..self.plan.steps.len() {
            let n = self.plan.steps[i].node;
            if !matches!(self.plan.steps[i].source, Source::Op) || self.folded[n].is_some() {
                continue;
            }
            let op = self.graph.ops[n]
                .as_ref()
                .expect("plan has only resolved ops");
            if !op.may_fold() || op.variable().is_some() {
                continue;
            }
            let mut inputs = Vec::new();
            for o in self.graph.nodes[n].inputs.iter().flatten() {
                match self.constant_input(o.node, o.slot)? {
                    Some(v) => inputs.push(v),
                    None => break,
                }
            }
            if inputs.len() != self.graph.nodes[n].inputs.len() || inputs.is_empty() {
                continue;
            }
            let facts = &self.graph.facts[n];
            if facts.iter().any(|f| f.shape.to_static().is_none()) {
                continue;
            }
            let in_bytes: u64 = inputs.iter().map(|v| v.byte_size() as u64).sum();
            let out_bytes = self.output_bytes(n, facts)?;
            if out_bytes > in_bytes.saturating_mul(MAX_GROWTH)
                || total.saturating_add(out_bytes) > budget
            {
                continue;
            }
            let Ok(values) = self.pool.install(|| op.eval(inputs)) else {
                continue;
            };
            if self.check_outputs(n, &values, facts, |_| true).is_err() {
                continue;
            }
            total += values.iter().map(|v| v.byte_size() as u64).sum::<u64>();
            self.folded[n] = Some(values);
        }
        Ok(())
    }
}
