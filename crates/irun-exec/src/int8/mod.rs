//! INT8 convolutions: a Convolution whose input is a FakeQuantize of one range (at most 256
//! levels) and whose filters are NNCF's compressed weights,
//!
//! ```text
//! Const i8 [Cout, Cin, KH, KW] -> Convert f32 -> Multiply (scale: one per output channel)
//! ```
//!
//! runs in integers on the FakeQuantize's input ([`irun_ops::linear::int8_conv`]): the
//! convolution reads `x` itself, computes each input's level by the FakeQuantize's own
//! formula, and sums u8 x i8 products exactly. The FakeQuantize and the filter subgraph stay
//! in the plan only for other readers. The result equals the f32 graph's up to f32 rounding (it
//! is the exact sum of the quantized values, rounded once). Only where the CPU has AVX-512
//! VNNI: elsewhere the f32 kernels are faster than exact integer products.

use irun_graph::{NodeId, Outlet};
use irun_ops::attrs::AttrReader;
use irun_ops::linear::int8_conv::{ActivationLevels, Int8Conv};
use irun_ops::linear::spatial::Spatial;
use irun_ops::quantize::FakeQuantizeRange;
use irun_tensor::{ElementType, Tensor};

use crate::plan::Source;
use crate::{Executable, RunError};

impl Executable {
    /// Gives every Convolution of the form above its integer kernel.
    pub(crate) fn use_int8_convolutions(&mut self) -> Result<(), RunError> {
        if !Int8Conv::fast_here() {
            return Ok(());
        }
        let mut found: Vec<(NodeId, Int8Conv, Outlet)> = Vec::new();
        for step in &self.plan.steps {
            let n = step.node;
            let layer = self.graph.layer(n);
            if !matches!(step.source, Source::Op)
                || layer.type_name != "Convolution"
                || self.folded[n].is_some()
                || self.prepared[n].is_some()
            {
                continue;
            }
            let input = |slot: usize| self.graph.nodes[n].inputs.get(slot).copied().flatten();
            let (Some(data), Some(filters)) = (input(0), input(1)) else {
                continue;
            };
            let Some((x, levels)) = self.activation_levels(data)? else {
                continue;
            };
            let Some((codes, scales)) = self.int8_filters(filters)? else {
                continue;
            };
            let Ok(spatial) = Spatial::read(&AttrReader::new(layer), false, false, true) else {
                continue;
            };
            let Some(values) = codes.values::<i8>() else {
                continue;
            };
            if let Some(kernel) = Int8Conv::new(&spatial, values, codes.shape(), &scales, levels) {
                found.push((n, kernel, x));
            }
        }
        for (n, kernel, x) in found {
            let outlet = self.plan.outlet(x.node, x.slot);
            self.plan.rewire(n, 0, outlet);
            self.plan.keep_inputs(n, &[0]);
            self.prepared_bytes += irun_ops::Prepared::byte_size(&kernel) as u64;
            self.prepared[n] = Some(Box::new(kernel));
        }
        self.plan.prune();
        Ok(())
    }

    /// The FakeQuantize-1 that is the one reader of `last`'s output, with one range or one
    /// per channel (dim 1), where a kernel may apply it as it writes that output: it still
    /// runs (no int8 convolution reads its input instead, so its input has no other reader
    /// in the plan). Its ranges, one or one per channel.
    pub(crate) fn fake_quantize_after(
        &self,
        last: NodeId,
    ) -> Result<Option<(NodeId, Vec<FakeQuantizeRange>)>, RunError> {
        let facts = &self.graph.facts[last];
        if facts.len() != 1 || facts[0].ty != ElementType::F32 {
            return Ok(None);
        }
        let Some(&[(m, 0)]) = self.graph.nodes[last].consumers.first().map(Vec::as_slice) else {
            return Ok(None);
        };
        if self.type_of(m) != "FakeQuantize" {
            return Ok(None);
        }
        // A FakeQuantize still in the plan has readers (it is no sink); `prune` left those
        // without any out.
        let in_plan = self.plan.readers[self.plan.outlet(m, 0)] > 0;
        if !in_plan || self.plan.readers[self.plan.outlet(last, 0)] != 1 {
            return Ok(None);
        }
        let Some((_, ranges, levels)) = self.fake_quantize_ranges(m)? else {
            return Ok(None);
        };
        let count = ranges.iter().map(Vec::len).max().unwrap_or(1);
        let at = |r: &Vec<f32>, c: usize| r[if r.len() == 1 { 0 } else { c }];
        let per_channel = (0..count)
            .map(|c| FakeQuantizeRange {
                input_low: at(&ranges[0], c),
                input_high: at(&ranges[1], c),
                output_low: at(&ranges[2], c),
                output_high: at(&ranges[3], c),
                last_level: (levels - 1) as f32,
            })
            .collect();
        Ok(Some((m, per_channel)))
    }

    /// FakeQuantize-1 node `n` of an f32 `[N, C, H, W]` input: its input, its four ranges
    /// (each one value, or `C` values along dim 1) and its levels.
    #[allow(clippy::type_complexity)]
    pub(crate) fn fake_quantize_ranges(
        &self,
        n: NodeId,
    ) -> Result<Option<(Outlet, [Vec<f32>; 4], u32)>, RunError> {
        let layer = self.graph.layer(n);
        if layer.type_name != "FakeQuantize" {
            return Ok(None);
        }
        let Ok(Ok(levels)) = AttrReader::new(layer)
            .i64_or("levels", None)
            .map(u32::try_from)
        else {
            return Ok(None);
        };
        let inputs = &self.graph.nodes[n].inputs;
        let Some(Some(x)) = inputs.first().copied() else {
            return Ok(None);
        };
        let fact = &self.graph.facts[x.node][x.slot];
        if fact.ty != ElementType::F32 || fact.shape.rank() != Some(4) {
            return Ok(None);
        }
        let channels = fact.shape.dims().and_then(|d| d[1].get_static());
        let mut ranges: [Vec<f32>; 4] = Default::default();
        for (slot, r) in ranges.iter_mut().enumerate() {
            let Some(Some(src)) = inputs.get(slot + 1).copied() else {
                return Ok(None);
            };
            let Some(value) = self.constant_input(src.node, src.slot)? else {
                return Ok(None);
            };
            let Some(v) = value.values::<f32>() else {
                return Ok(None);
            };
            let shape = value.shape();
            let along_channels = shape.len() <= 4
                && channels == Some(v.len() as u64)
                && shape
                    .iter()
                    .rev()
                    .enumerate()
                    .all(|(d, &s)| s == 1 || d == 2);
            *r = match v {
                [first, rest @ ..] if rest.iter().all(|x| x.to_bits() == first.to_bits()) => {
                    vec![*first]
                }
                _ if along_channels => v.to_vec(),
                _ => return Ok(None),
            };
        }
        Ok(Some((x, ranges, levels)))
    }

    /// For the output `o` of a FakeQuantize-1 of an f32 `[N, C, H, W]` input with one value in
    /// each range input: its input and ranges. For the values of a MaxPool of such an output,
    /// which are levels of the FakeQuantize themselves: that output, read with the output
    /// range as input range too (each value is then its own level: `(v - low) / step` is
    /// within a few f32 roundings of an integer of at most 255).
    fn activation_levels(&self, o: Outlet) -> Result<Option<(Outlet, ActivationLevels)>, RunError> {
        let layer = self.graph.layer(o.node);
        if layer.type_name == "MaxPool" && o.slot == 0 {
            let Some(Some(pooled)) = self.graph.nodes[o.node].inputs.first().copied() else {
                return Ok(None);
            };
            if !every_window_reads_the_input(layer) {
                return Ok(None);
            }
            return Ok(self.activation_levels(pooled)?.map(|(_, levels)| {
                let on_grid = ActivationLevels {
                    input_low: levels.output_low,
                    input_high: levels.output_high,
                    ..levels
                };
                (o, on_grid)
            }));
        }
        self.fake_quantize_levels(o)
    }

    /// [`Self::activation_levels`] of a FakeQuantize's output: one value in each range.
    fn fake_quantize_levels(
        &self,
        o: Outlet,
    ) -> Result<Option<(Outlet, ActivationLevels)>, RunError> {
        let Some((x, ranges, levels)) = self.fake_quantize_ranges(o.node)? else {
            return Ok(None);
        };
        if ranges.iter().any(|r| r.len() != 1) {
            return Ok(None);
        }
        let levels = ActivationLevels {
            input_low: ranges[0][0],
            input_high: ranges[1][0],
            output_low: ranges[2][0],
            output_high: ranges[3][0],
            levels,
        };
        // Where something other than a convolution reads the FakeQuantize (a residual Add),
        // its output is computed anyway: read it, each value its own level, and leave its
        // input to the FakeQuantize alone (which can then be applied by whatever writes that
        // input, `fuse.rs`).
        let others = self.graph.nodes[o.node]
            .consumers
            .iter()
            .flatten()
            .any(|&(m, _)| self.type_of(m) != "Convolution");
        if others {
            let on_grid = ActivationLevels {
                input_low: levels.output_low,
                input_high: levels.output_high,
                ..levels
            };
            return Ok(Some((o, on_grid)));
        }
        Ok(Some((x, levels)))
    }

    /// For filters computed as `Convert(Const i8 [Cout, Cin, KH, KW]) * scale` (either side,
    /// matched as compressed weights are, without a zero point), the scale constant with
    /// one value per output channel (`[Cout, 1, 1, 1]`) or one in all: the codes (decoded,
    /// not kept: the kernel packs them) and the scales.
    fn int8_filters(&self, o: Outlet) -> Result<Option<(Tensor, Vec<f32>)>, RunError> {
        let m = o.node;
        if self.type_of(m) != "Multiply" || self.graph.facts[m][0].ty != ElementType::F32 {
            return Ok(None);
        }
        let Some((codes, None, scale)) = self.scaled_codes(m) else {
            return Ok(None);
        };
        let stored = self.graph.layer(codes).constant.as_ref();
        if stored.map(|c| c.element_type) != Some(ElementType::I8) {
            return Ok(None);
        }
        let codes = self.decode_constant(codes, self.memory_limit)?;
        let &[co, _, _, _] = codes.shape() else {
            return Ok(None);
        };
        let Some(scale) = self.constant_input(scale, 0)? else {
            return Ok(None);
        };
        let Some(scales) = scale.values::<f32>() else {
            return Ok(None);
        };
        if scales.len() != 1 && scale.shape() != [co, 1, 1, 1] {
            return Ok(None);
        }
        Ok(Some((codes, scales.to_vec())))
    }
}

/// Whether every window of MaxPool `layer` covers at least one input element, so that each
/// of its outputs is one of its inputs (a window all padding would give -inf, no level):
/// floor rounding, no dilation, and explicit pads smaller than the kernel (`same_*` pads
/// always are).
pub(crate) fn every_window_reads_the_input(layer: &irun_ir::Layer) -> bool {
    use irun_ops::linear::spatial::{list, AutoPad, Rounding};
    let a = AttrReader::new(layer);
    let (Ok(sp), Ok(kernel)) = (
        Spatial::read(&a, true, true, true),
        list(&a, "kernel", None),
    ) else {
        return false;
    };
    let pads_fit = match sp.auto_pad {
        AutoPad::SameUpper | AutoPad::SameLower | AutoPad::Valid => true,
        AutoPad::Explicit => (0..kernel.len()).all(|d| {
            sp.pads_begin.get(d).is_some_and(|&p| p < kernel[d])
                && sp.pads_end.get(d).is_some_and(|&p| p < kernel[d])
        }),
    };
    sp.rounding == Rounding::Floor && sp.dilations.iter().all(|&d| d == 1) && pads_fit
}

#[cfg(test)]
mod tests;
