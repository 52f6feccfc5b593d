//! Levels between int8 layers: an int8 convolution whose every reader takes the levels of
//! one FakeQuantize writes those levels as u8 ([`irun_ops::Prepared::set_levels_output`])
//! rather than the f32 values they stand for: a quarter of the bytes, and no level computed
//! again (a division) by each reader. The readers that take them:
//!
//! - an int8 convolution reading the value as its input, whose levels are those of that
//!   FakeQuantize (the same FakeQuantize's input, or its output each value its own level);
//! - an int8 convolution adding the value as its residual (the FakeQuantize's output: each
//!   level stands for its value, [`irun_ops::quantize::FakeQuantizeRange::value_of_level`]);
//! - a MaxPool of the FakeQuantize's output whose every window reads the input (the maximum
//!   of the levels is the level of the maximum) whose own readers all take levels.
//!
//! The value then holds u8 where the graph says f32: `levels_out` lets the output checks
//! take it. A writer that meets an output with no level (NaN) writes f32 for that run, and
//! every reader above takes f32 too, so the values are the graph's either way (but for the
//! top level's value, see `value_of_level`).

use irun_graph::NodeId;
use irun_ops::quantize::FakeQuantizeRange;
use irun_ops::Prepared;

use crate::int8::every_window_reads_the_input;
use crate::plan::Source;
use crate::{Executable, RunError};

/// A step that reads a value in levels form, and how.
enum Reader {
    /// A prepared kernel, through this input slot.
    Kernel(NodeId, usize),
    /// A MaxPool (values output only), and its own readers.
    Pool(NodeId, Vec<Reader>),
}

impl Executable {
    /// Has every int8 convolution whose readers all take levels write them.
    pub(crate) fn use_levels_between_layers(&mut self) -> Result<(), RunError> {
        let readers = self.plan_readers();
        for i in 0..self.plan.steps.len() {
            let n = self.plan.steps[i].node;
            if !matches!(self.plan.steps[i].source, Source::Op)
                || self.prepared[n].is_none()
                || self.fused[n].is_some()
                || self.graph.facts[n].len() != 1
            {
                continue;
            }
            let (end, last_quantize) = self.chain_end(n, &readers);
            let after_quantize = last_quantize.is_some();
            let Some(found) = self.levels_readers(&readers, end, after_quantize) else {
                continue;
            };
            let q = match last_quantize {
                Some(m) => self.single_range(m)?,
                None => self.readers_range(&found)?,
            };
            let Some(q) = q else { continue };
            if self.offer_levels(&found, &q)
                && self.prepared[n]
                    .as_mut()
                    .is_some_and(|k| k.set_levels_output(&q))
            {
                self.levels_out[n] = true;
                self.mark_pools(&found);
            }
        }
        Ok(())
    }

    /// Per outlet, the steps that read it: (node, input slot).
    fn plan_readers(&self) -> Vec<Vec<(NodeId, usize)>> {
        let mut readers = vec![Vec::new(); self.plan.outlet_count];
        for step in &self.plan.steps {
            for (slot, &o) in step.inputs.iter().enumerate() {
                readers[o].push((step.node, slot));
            }
        }
        readers
    }

    /// The outlet where kernel `n`'s value leaves the ops it took over (each passes its
    /// input through), and the last of those if it is a FakeQuantize.
    fn chain_end(&self, n: NodeId, readers: &[Vec<(NodeId, usize)>]) -> (usize, Option<NodeId>) {
        let mut at = self.plan.outlet(n, 0);
        let mut last = None;
        while let [(m, slot)] = readers[at][..] {
            if self.fused[m] != Some(slot) || self.graph.facts[m].len() != 1 {
                break;
            }
            at = self.plan.outlet(m, 0);
            last = Some(m);
        }
        let quantize = last.filter(|&m| self.type_of(m) == "FakeQuantize");
        (at, quantize)
    }

    /// The readers of outlet `of` (`readers`: those of each outlet), if every one takes
    /// levels; a MaxPool or a residual addend only `after_quantize` (they need the
    /// FakeQuantize's output, not its input).
    fn levels_readers(
        &self,
        readers: &[Vec<(NodeId, usize)>],
        of: usize,
        after_quantize: bool,
    ) -> Option<Vec<Reader>> {
        let of = &readers[of];
        if of.is_empty() {
            return None;
        }
        let mut found = Vec::with_capacity(of.len());
        for &(m, slot) in of {
            let step = self.plan.steps.iter().find(|s| s.node == m)?;
            if !matches!(step.source, Source::Op) || self.fused[m].is_some() {
                return None;
            }
            if self.prepared[m].is_some() {
                if slot != 0 && !after_quantize {
                    return None;
                }
                found.push(Reader::Kernel(m, slot));
                continue;
            }
            let layer = self.graph.layer(m);
            let pools = after_quantize
                && slot == 0
                && layer.type_name == "MaxPool"
                && self.flows[m].is_none()
                && self.index_broadcasts[m].is_none()
                && every_window_reads_the_input(layer);
            if !pools {
                return None;
            }
            let own = self.levels_readers(readers, self.plan.outlet(m, 0), true)?;
            found.push(Reader::Pool(m, own));
        }
        Some(found)
    }

    /// The one range of FakeQuantize `m` (None if it has one per channel).
    fn single_range(&self, m: NodeId) -> Result<Option<FakeQuantizeRange>, RunError> {
        let Some((_, ranges, levels)) = self.fake_quantize_ranges(m)? else {
            return Ok(None);
        };
        if ranges.iter().any(|r| r.len() != 1) || !(2..=256).contains(&levels) {
            return Ok(None);
        }
        Ok(Some(FakeQuantizeRange {
            input_low: ranges[0][0],
            input_high: ranges[1][0],
            output_low: ranges[2][0],
            output_high: ranges[3][0],
            last_level: (levels - 1) as f32,
        }))
    }

    /// For a value no FakeQuantize follows in its kernel, read only by int8 convolutions
    /// through their input: the range of the FakeQuantize each of them quantizes it by (in
    /// the graph, its input), if they all have the same one.
    fn readers_range(&self, found: &[Reader]) -> Result<Option<FakeQuantizeRange>, RunError> {
        let mut range: Option<FakeQuantizeRange> = None;
        for r in found {
            let Reader::Kernel(c, 0) = *r else {
                return Ok(None);
            };
            let Some(Some(fq)) = self.graph.nodes[c].inputs.first().copied() else {
                return Ok(None);
            };
            if self.type_of(fq.node) != "FakeQuantize" {
                return Ok(None);
            }
            let Some(q) = self.single_range(fq.node)? else {
                return Ok(None);
            };
            if range.is_some_and(|r| r != q) {
                return Ok(None);
            }
            range = Some(q);
        }
        Ok(range)
    }

    /// Offers the levels of `q` to every kernel among `found` (a kernel that takes them
    /// takes f32 still); whether all take them.
    fn offer_levels(&mut self, found: &[Reader], q: &FakeQuantizeRange) -> bool {
        found.iter().all(|r| match *r {
            Reader::Kernel(m, slot) => self.prepared[m]
                .as_mut()
                .is_some_and(|k: &mut Box<dyn Prepared>| k.set_levels_input(slot, q)),
            Reader::Pool(_, ref own) => self.offer_levels(own, q),
        })
    }

    fn mark_pools(&mut self, found: &[Reader]) {
        for r in found {
            if let Reader::Pool(m, own) = r {
                self.levels_out[*m] = true;
                self.mark_pools(own);
            }
        }
    }
}
