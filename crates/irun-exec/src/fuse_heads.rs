//! Shared key and value heads: a grouped-query attention exported from PyTorch (Llama,
//! Qwen, Phi-3 with fewer key-value heads than query heads) repeats each key and value head
//! for its query heads before ScaledDotProductAttention, as `Unsqueeze(kv, 2)` ->
//! `Broadcast` to `[B, kv_heads, groups, S, E]` -> `Reshape` to `[B, heads, S, E]`: a copy
//! of the whole KV cache, `groups` times over, at every decode step (a 1000-token context
//! in the 106M Llama: 33 MB written per token, then read again by the attention). The
//! attention reads the shared heads instead ([`irun_ops::Op::eval_shared_heads`]): the three
//! nodes pass their input through, keeping their other inputs (axes, target shapes) for the
//! attention. There, the three ops' own inference on those values says whether they
//! compute exactly that repeat for this run's shapes; when they do not (or the op does not
//! serve the inputs), the three run after all on the kept inputs, so results never change.
//! Compiled executables only.

use irun_graph::NodeId;
use irun_ops::{Fact, OpError, Value};

use crate::fuse_index::{kept_inputs, single};
use crate::plan::Source;
use crate::Executable;

/// The Unsqueeze, Broadcast and Reshape between a shared key or value and the attention.
pub(crate) type HeadLinks = [NodeId; 3];

/// The attention's chains for its keys (input 1) and values (input 2).
#[derive(Clone, Debug)]
pub(crate) struct SharedHeads {
    links: [HeadLinks; 2],
}

const ATTENTION: &str = "ScaledDotProductAttention-13";

impl Executable {
    /// Finds every attention whose keys and values both arrive through such a chain, each
    /// node of it read by the next alone; marks the chains' nodes to pass their data through.
    pub(crate) fn fuse_shared_heads(&mut self) {
        for i in 0..self.plan.steps.len() {
            let n = self.plan.steps[i].node;
            if !matches!(self.plan.steps[i].source, Source::Op)
                || !self.runs_unfused(n)
                || self.op_named(n) != Some(ATTENTION)
            {
                continue;
            }
            let (Some(keys), Some(values)) = (self.head_links(n, 1), self.head_links(n, 2)) else {
                continue;
            };
            for &m in keys.iter().chain(&values) {
                self.fused[m] = Some(0);
                self.keeps_inputs[m] = true;
            }
            self.shared_heads[n] = Some(SharedHeads {
                links: [keys, values],
            });
        }
    }

    /// The Unsqueeze, Broadcast and Reshape (in that order) that feed input `slot` of `n`,
    /// each read by the next alone.
    fn head_links(&self, n: NodeId, slot: usize) -> Option<HeadLinks> {
        let mut links = [0; 3];
        let (mut reader, mut reader_slot) = (n, slot);
        for (k, names) in [
            &["Reshape-1"][..],
            &["Broadcast-3", "Broadcast-1"][..],
            &["Unsqueeze-1"][..],
        ]
        .into_iter()
        .enumerate()
        {
            let (m, other_readers) = self.producer_for(reader, reader_slot)?;
            if !other_readers.is_empty() || !self.op_named(m).is_some_and(|o| names.contains(&o)) {
                return None;
            }
            links[2 - k] = m;
            (reader, reader_slot) = (m, 0);
        }
        Some(links)
    }

    /// Runs attention `n`, whose keys and values arrived as they were before their chains;
    /// `held`: the other inputs each chain node of this run kept; `left`: the bytes the memory
    /// limit leaves.
    pub(crate) fn run_shared_heads(
        &self,
        n: NodeId,
        shared: &SharedHeads,
        mut args: Vec<Value>,
        held: &[(NodeId, Vec<Value>)],
        left: u64,
    ) -> Result<Vec<Value>, OpError> {
        let op = self.graph.ops[n]
            .as_ref()
            .expect("fused only when resolved");
        let kept = |m: NodeId| kept_inputs(held, m);
        // Per chain, the output shapes of its three nodes for this run's inputs.
        let mut shapes = [const { Vec::new() }; 2];
        for ((links, x), shapes) in shared.links.iter().zip(&args[1..3]).zip(&mut shapes) {
            let mut fact = Fact::of_static(x.element_type(), x.shape());
            for &m in links {
                fact = self
                    .link_output(m, fact, kept(m)?)
                    .unwrap_or_else(Fact::unknown);
                shapes.push(fact.shape.to_static());
            }
        }
        let groups = [1, 2].map(|slot| repeat_of(&shapes[slot - 1], args[slot].shape()));
        if let [Some(g), Some(h)] = groups {
            if g == h {
                if let Some(out) = op.eval_shared_heads(&mut args, g)? {
                    return Ok(out);
                }
            }
        }
        // The chains' own ops on the kept inputs: what the graph computes, the broadcasts
        // checked against what the memory limit leaves (the nodes counted none).
        let need = shapes
            .iter()
            .zip(&args[1..3])
            .try_fold(0u64, |sum, (shapes, x)| {
                let broadcast = shapes.get(1)?.as_deref()?;
                let count = irun_tensor::element_count(broadcast)? as u64;
                let bytes = x.element_type().bit_width().div_ceil(8);
                sum.checked_add(count.checked_mul(bytes)?.checked_mul(2)?)
            });
        if need.is_none_or(|need| need > left) {
            return Err(OpError::new(
                irun_ops::codes::MEMORY,
                format!(
                    "the repeated keys and values need {} bytes, {left} are left under the \
                     memory limit",
                    need.map_or("more".to_string(), |n| n.to_string())
                ),
            ));
        }
        for (slot, links) in [1, 2].into_iter().zip(&shared.links) {
            for &m in links {
                let mut inputs = vec![args[slot].clone()];
                inputs.extend(kept(m)?.iter().cloned());
                let link = self.graph.ops[m]
                    .as_ref()
                    .expect("fused only when resolved");
                args[slot] = single(link.eval(inputs)?)?;
            }
        }
        op.eval(args)
    }

    /// The output fact of chain node `m` for an input of fact `input` and its `kept` other
    /// inputs, by the op's own inference on their values (`None` where it fails).
    fn link_output(&self, m: NodeId, input: Fact, kept: &[Value]) -> Option<Fact> {
        let op = self.graph.ops[m].as_ref()?;
        let mut facts = vec![input];
        facts.extend(
            kept.iter()
                .map(|v| Fact::of_static(v.element_type(), v.shape()).with_value((**v).clone())),
        );
        op.infer(&facts).ok()?.into_iter().next()
    }

    /// How many attentions read shared key and value heads rather than repeated ones.
    pub fn shared_head_attentions(&self) -> usize {
        self.shared_heads.iter().flatten().count()
    }
}

/// `groups` if the chain's output shapes (`shapes`: the Unsqueeze's, the Broadcast's, the
/// Reshape's) are those of `x` (`[..., heads, S, E]`) with each head repeated `groups` times
/// in a row: `[..., heads, 1, S, E]`, `[..., heads, groups, S, E]`, `[..., heads * groups,
/// S, E]`.
fn repeat_of(shapes: &[Option<Vec<usize>>], x: &[usize]) -> Option<usize> {
    let [Some(unsqueezed), Some(broadcast), Some(reshaped)] = shapes else {
        return None;
    };
    let r = x.len();
    if r < 3 {
        return None;
    }
    let (lead, tail) = x.split_at(r - 2);
    let groups = *broadcast.get(r - 2)?;
    let with = |middle: &[usize]| -> Vec<usize> {
        let mut s = lead.to_vec();
        s.extend_from_slice(middle);
        s.extend_from_slice(tail);
        s
    };
    let mut repeated = lead[..r - 3].to_vec();
    repeated.push(lead[r - 3].checked_mul(groups)?);
    repeated.extend_from_slice(tail);
    (groups > 1
        && *unsqueezed == with(&[1])
        && *broadcast == with(&[groups])
        && *reshaped == repeated)
        .then_some(groups)
}
