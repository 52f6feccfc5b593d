//! A 2-D Convolution of quantized activations by i8 weights, computed in integers: what NNCF's
//! INT8 networks write as
//!
//! ```text
//! x -> FakeQuantize(levels <= 256, one range for the whole tensor) -> Convolution
//!                         Const i8 -> Convert f32 -> Multiply(scale per output channel) -^
//! ```
//!
//! The FakeQuantize maps each `x` to one of its levels `k` (0..levels), whose value is
//! `low + k * step`; the filters are `code * scale[co]`. Where the level `zero` has the value
//! 0 (the padding's value), each output is exactly
//! `scale[co] * step * sum((k - zero) * code)` over its window: the sum of u8 x i8 products is
//! an integer, computed exactly in i32 (AVX-512 VNNI's `vpdpbusd`, 64 products per
//! instruction), and the one rounding is the final f32 multiply. The f32 graph rounds every
//! product and partial sum instead, so the two differ by f32 rounding only, and this one is the
//! closer to the real-number result. The level of each `x` is the FakeQuantize's own f32
//! formula ([`ActivationLevels::level`]), so no input lands on another level than the op
//! would give it; a NaN input makes every output whose window reads it NaN, as in f32.
//!
//! Layout: the input is quantized once per image into words of 4 channels' levels (one `u32`
//! per position, `vpdpbusd`'s unit), split by stride phase (`s x s` planes for stride `s`, so
//! that consecutive outputs read consecutive words), padded with the zero level, and laid flat
//! with the padded row pitch: output position `p = oh * pitch + ow` reads word
//! `p + offset(tap)` for every tap, so 16 consecutive outputs are one vector load per tap and
//! channel group. Positions past a row's end are computed and dropped. The weights are packed
//! at compile time as `[8 output channels][tap][channel group][8]` words.

mod avx512;
mod channel_lanes;
mod layout;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use std::sync::atomic::{AtomicBool, Ordering};

use irun_opkit::epilogue::{Addend, Channels, Epilogue, Residual};
use irun_opkit::quantize::FakeQuantizeRange;
use irun_tensor::Tensor;

use crate::op::{codes, take_inputs, OpError, Prepared, Value};
use crate::spatial::Spatial;
use layout::{BlockScales, Geometry};

/// Values finished at a time for a levels output (16 KB of f32, half of L1).
const LEVELS_SPAN: usize = 4096;

/// Output channels per block: the broadcast weights of one step.
const CO_BLOCK: usize = 8;

/// A FakeQuantize-1 with one range for the whole tensor, as the int8 convolution reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActivationLevels {
    pub input_low: f32,
    pub input_high: f32,
    pub output_low: f32,
    pub output_high: f32,
    pub levels: u32,
}

impl ActivationLevels {
    /// The level FakeQuantize-1 gives `x` (as an f32 integer), by the op's own f32 formula:
    /// 0 at or below `input_low`, the last above `input_high`, else
    /// `round_half_even((x - input_low) / (input_high - input_low) * (levels - 1))`; NaN
    /// for NaN.
    #[inline(always)]
    pub fn level(&self, x: f32) -> f32 {
        self.range().level(x)
    }

    /// The same ranges as a [`FakeQuantizeRange`].
    fn range(&self) -> FakeQuantizeRange {
        FakeQuantizeRange {
            input_low: self.input_low,
            input_high: self.input_high,
            output_low: self.output_low,
            output_high: self.output_high,
            last_level: (self.levels - 1) as f32,
        }
    }

    /// Whether the levels `q` gives are the ones this reading computes: `q` itself (the
    /// FakeQuantize's input read), or its output read with the output range as input
    /// range (each value its own level).
    pub fn reads_levels_of(&self, q: &FakeQuantizeRange) -> bool {
        let bits = |r: &FakeQuantizeRange| {
            [
                r.input_low,
                r.input_high,
                r.output_low,
                r.output_high,
                r.last_level,
            ]
            .map(f32::to_bits)
        };
        let on_grid = FakeQuantizeRange {
            input_low: q.output_low,
            input_high: q.output_high,
            ..*q
        };
        let own = bits(&self.range());
        own == bits(q) || own == bits(&on_grid)
    }

    /// The output step between two levels, in f64.
    fn step(&self) -> f64 {
        (f64::from(self.output_high) - f64::from(self.output_low)) / f64::from(self.levels - 1)
    }

    /// The level whose value is 0, if one is (within f32 rounding of the ranges): the padding
    /// and the offset of every product. None for ranges the kernel does not take (reversed,
    /// not finite, more than 256 levels).
    fn zero_level(&self) -> Option<u8> {
        let finite = [
            self.input_low,
            self.input_high,
            self.output_low,
            self.output_high,
        ]
        .iter()
        .all(|v| v.is_finite());
        if !finite
            || !(2..=256).contains(&self.levels)
            || self.input_low >= self.input_high
            || self.output_low >= self.output_high
        {
            return None;
        }
        let zero = -f64::from(self.output_low) / self.step();
        let level = zero.round();
        let on_grid = (zero - level).abs() <= 1e-3;
        (on_grid && level >= 0.0 && level <= f64::from(self.levels - 1)).then_some(level as u8)
    }
}

/// The prepared int8 convolution: one input (the FakeQuantize's input), output f32
/// `[N, Cout, OH, OW]`, with the bias and activation after it as an epilogue.
#[derive(Debug)]
pub struct Int8Conv {
    spatial: Spatial,
    levels: ActivationLevels,
    zero: u8,
    out_channels: usize,
    in_channels: usize,
    kernel: [usize; 2],
    /// `[co block][tap][channel group][CO_BLOCK]`, 4 i8 codes per word, channel `4g` lowest.
    weights: Vec<i32>,
    /// The same weights for the channel-lane blocks (`channel_lanes.rs`), when the output
    /// channels fill them.
    channel_weights: Vec<i32>,
    /// Per output channel: `zero * sum(codes)`, subtracted from the integer sum.
    zero_sums: Vec<i32>,
    /// Per output channel: `scale * step`, rounded to f32.
    scales: Vec<f32>,
    epilogue: Option<Epilogue>,
    /// The FakeQuantize after the epilogue, if the kernel took it over: one range, or one
    /// per output channel.
    quantize: Vec<FakeQuantizeRange>,
    /// The residual Add (and what follows it) after all that, if the kernel took it over:
    /// its other input is then the kernel's second.
    residual: Option<Residual>,
    /// The range whose levels the output is written as, if one is set: the last
    /// FakeQuantize taken over, or the levels every reader computes.
    levels_out: Option<FakeQuantizeRange>,
    /// Whether a u8 input is the levels of `levels` (written by another int8 convolution).
    levels_in: bool,
    /// The value of each level of the residual addend when it comes as levels.
    addend_levels: Option<Box<[f32; 256]>>,
}

/// Why an integer sum cannot overflow: each product is at most 255 * 128 in size, and a
/// window of fewer than `MAX_WINDOW` of them stays below 2^31.
const MAX_WINDOW: usize = (i32::MAX as usize) / (255 * 128);

impl Int8Conv {
    /// The kernel for filters of i8 `codes` `[Cout, Cin, KH, KW]` scaled by `scales` (one per
    /// output channel, or one for all), on activations quantized by `levels`; `None` where
    /// the integer form is not exact (no level is 0, a window so large the sum could
    /// overflow) or the geometry is not 2-D.
    pub fn new(
        spatial: &Spatial,
        codes: &[i8],
        shape: &[usize],
        scales: &[f32],
        levels: ActivationLevels,
    ) -> Option<Int8Conv> {
        let &[co, ci, kh, kw] = shape else {
            return None;
        };
        if spatial.rank() != 2
            || codes.len() != co * ci * kh * kw
            || co == 0
            || (scales.len() != co && scales.len() != 1)
            || ci * kh * kw >= MAX_WINDOW
            || scales.iter().any(|s| !s.is_finite())
        {
            return None;
        }
        let zero = levels.zero_level()?;
        let groups = ci.div_ceil(4);
        let taps = kh * kw;
        let blocks = co.div_ceil(CO_BLOCK);
        let mut packed = vec![0u32; blocks * taps * groups * CO_BLOCK];
        let mut zero_sums = vec![0i32; co];
        for o in 0..co {
            let (block, lane) = (o / CO_BLOCK, o % CO_BLOCK);
            for c in 0..ci {
                for t in 0..taps {
                    let code = codes[(o * ci + c) * taps + t];
                    zero_sums[o] += i32::from(zero) * i32::from(code);
                    let word = ((block * taps + t) * groups + c / 4) * CO_BLOCK + lane;
                    packed[word] |= u32::from(code as u8) << (8 * (c % 4));
                }
            }
        }
        let step = levels.step();
        let scales = (0..co)
            .map(|o| (f64::from(scales[o % scales.len()]) * step) as f32)
            .collect();
        let weights: Vec<i32> = packed.into_iter().map(|w| w as i32).collect();
        let channel_weights = if co.is_multiple_of(channel_lanes::CHANNELS) {
            channel_lanes::pack(&weights, co, taps, groups)
        } else {
            Vec::new()
        };
        Some(Int8Conv {
            spatial: spatial.clone(),
            levels,
            zero,
            out_channels: co,
            in_channels: ci,
            kernel: [kh, kw],
            weights,
            channel_weights,
            zero_sums,
            scales,
            epilogue: None,
            quantize: Vec::new(),
            residual: None,
            levels_out: None,
            levels_in: false,
            addend_levels: None,
        })
    }

    /// Whether this CPU runs the kernel at speed (AVX-512 with VNNI); elsewhere it runs, exactly
    /// the same, one product at a time, and the executor keeps the f32 graph instead.
    pub fn fast_here() -> bool {
        avx512::available()
    }

    /// The output for `data` `[N, Cin, H, W]` (f32, or u8 levels where the kernel was told
    /// to take them, [`Prepared::set_levels_input`]), and the residual Add's other input when
    /// the kernel took one over (`[N, Cout, OH, OW]`, f32 or levels likewise). The output is
    /// f32, or the levels of [`Prepared::set_levels_output`]'s range where one was set and
    /// every output has one (one that is NaN makes it f32 again).
    pub fn run(
        &self,
        data: &Tensor,
        addend: Option<&Tensor>,
        vectorised: bool,
    ) -> Result<Tensor, OpError> {
        let shape = data.shape();
        let &[n, ci, h, w] = shape else {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("int8 Convolution: input {shape:?} is not [N, C, H, W]"),
            ));
        };
        if ci != self.in_channels {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "int8 Convolution: the input has {ci} channels, the filters {}",
                    self.in_channels
                ),
            ));
        }
        let g = Geometry::new(&self.spatial, ci, [h, w], self.kernel)?;
        let plane = g.out_h * g.out_w;
        let co = self.out_channels;
        let addend = match (&self.residual, addend) {
            (None, None) => None,
            (Some(_), Some(t)) if t.shape() == [n, co, g.out_h, g.out_w] => Some(
                match (t.values::<f32>(), t.values::<u8>(), &self.addend_levels) {
                    (Some(v), _, _) => Addend::Values(v),
                    (_, Some(k), Some(table)) => Addend::Levels(k, table),
                    _ => {
                        return Err(OpError::new(
                            codes::UNSUPPORTED_TYPE,
                            format!(
                                "int8 Convolution: the residual input is {}, not f32",
                                t.element_type()
                            ),
                        ))
                    }
                },
            ),
            _ => {
                return Err(OpError::new(
                    codes::RUN_SHAPE,
                    "int8 Convolution: the residual input does not match the output",
                ))
            }
        };
        let src = match (data.values::<f32>(), data.values::<u8>()) {
            (Some(x), _) => Source::Values(x),
            (_, Some(k)) if self.levels_in => Source::Levels(k),
            _ => {
                return Err(OpError::new(
                    codes::UNSUPPORTED_TYPE,
                    format!(
                        "int8 Convolution: the input is {}, not f32",
                        data.element_type()
                    ),
                ))
            }
        };
        let len = n
            .checked_mul(co)
            .and_then(|v| v.checked_mul(plane))
            .ok_or_else(|| OpError::new(codes::RUN_SHAPE, "int8 Convolution: output too large"))?;
        let vectorised = vectorised && avx512::available();
        // One image's words at a time, each used while in cache.
        let quantize_image = |image: usize| {
            let at = image * ci * h * w..(image + 1) * ci * h * w;
            match src {
                Source::Values(x) => {
                    layout::quantize(&x[at], ci, &g, &self.levels, self.zero, vectorised)
                }
                Source::Levels(k) => {
                    layout::quantize(&k[at], ci, &g, &self.levels, self.zero, vectorised)
                }
            }
        };
        let shape = vec![n, co, g.out_h, g.out_w];
        if let Some(q) = &self.levels_out {
            // Zero-filled by all threads, a channel plane at a time, as below.
            let mut out = irun_opkit::par::build(len, plane.max(1), &|_, filler| {
                filler.repeat(0u8, filler.remaining())
            })?;
            let mut nan = false;
            for image in 0..n {
                // A NaN input or output has no level: the f32 output below instead.
                let words = quantize_image(image)?;
                if words.nan {
                    nan = true;
                    break;
                }
                let dst = &mut out[image * co * plane..(image + 1) * co * plane];
                let image_addend = addend.map(|a| a.range(image * co * plane, co * plane));
                nan = self.convolve_image(
                    &words.words,
                    &g,
                    Out::Levels(dst, q),
                    image_addend,
                    vectorised,
                );
                if nan {
                    break;
                }
            }
            if !nan {
                return Tensor::from_values(shape, out)
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()));
            }
        }
        // Zeroed by all threads, a channel plane at a time (each slot is then written by the
        // kernel): a one-thread memset of every output was 2-3% of ResNet-18's time.
        let mut out = irun_opkit::par::build(len, plane.max(1), &|_, filler| {
            filler.repeat(0.0, filler.remaining())
        })?;
        for image in 0..n {
            let words = quantize_image(image)?;
            let dst = &mut out[image * co * plane..(image + 1) * co * plane];
            // An output the spread below sets to NaN is NaN after the residual too.
            let image_addend = addend.map(|a| a.range(image * co * plane, co * plane));
            self.convolve_image(&words.words, &g, Out::Values(dst), image_addend, vectorised);
            if let (true, Source::Values(x)) = (words.nan, src) {
                let src = &x[image * ci * h * w..(image + 1) * ci * h * w];
                layout::spread_nan(src, ci, &g, dst);
            }
        }
        Tensor::from_f32(shape, out).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// One image's output planes from its `words`, each block of output channels on its own
    /// task, finished and written to `out`; whether a levels output met a NaN (it is then
    /// incomplete).
    fn convolve_image(
        &self,
        words: &[u32],
        g: &Geometry,
        out: Out,
        addend: Option<Addend>,
        vectorised: bool,
    ) -> bool {
        let plane = g.out_h * g.out_w;
        let lanes = channel_lanes::positions_per_block(g, self.out_channels);
        let per_task = match lanes {
            Some(_) => channel_lanes::CHANNELS,
            None => CO_BLOCK,
        } * plane.max(1);
        let fill = |start: usize, planes: &mut [f32]| {
            let first = start / plane.max(1);
            match lanes {
                Some(per_block) => {
                    self.fill_channels(words, g, per_block, first, planes, vectorised)
                }
                None => self.fill_positions(words, g, first, planes, vectorised),
            }
        };
        let finish = |start: usize, planes: &mut [f32], levels: bool| {
            let addend = addend.map(|a| a.range(start, planes.len()));
            self.finish(planes, start / plane.max(1), plane, addend, levels);
        };
        match out {
            Out::Values(dst) => {
                irun_opkit::par::for_each_chunk_mut(dst, per_task, &|start, chunk| {
                    fill(start, chunk);
                    finish(start, chunk, false);
                });
                false
            }
            Out::Levels(dst, q) => {
                // Finished and turned into levels a few planes at a time, while they are
                // in L1: two passes over the block's planes missed it on the second.
                let span = (LEVELS_SPAN / plane.max(1)).max(1) * plane.max(1);
                let nan = AtomicBool::new(false);
                irun_opkit::par::for_each_chunk_mut(dst, per_task, &|start, chunk| {
                    with_scratch(chunk.len(), |planes| {
                        fill(start, planes);
                        for (i, (part, levels)) in planes
                            .chunks_mut(span)
                            .zip(chunk.chunks_mut(span))
                            .enumerate()
                        {
                            finish(start + i * span, part, true);
                            if to_levels(q, part, levels, vectorised) {
                                nan.store(true, Ordering::Relaxed);
                            }
                        }
                    })
                });
                nan.into_inner()
            }
        }
    }

    /// The planes of output channels `first..` (a block of [`CO_BLOCK`]) in position
    /// blocks, in order.
    fn fill_positions(
        &self,
        words: &[u32],
        g: &Geometry,
        first: usize,
        planes: &mut [f32],
        vectorised: bool,
    ) {
        let plane = g.out_h * g.out_w;
        let span = g.span();
        let taps = g.taps.len();
        let block = first / CO_BLOCK;
        let weights =
            &self.weights[block * taps * g.groups * CO_BLOCK..][..taps * g.groups * CO_BLOCK];
        let scales = BlockScales::of(&self.zero_sums, &self.scales, first);
        let lanes = CO_BLOCK.min(self.out_channels - first);
        let mut rows = [[0f32; layout::MAX_SPAN]; CO_BLOCK];
        let mut p = 0;
        while p < g.positions {
            if vectorised {
                // SAFETY: `available()` found AVX-512 F, BW and VNNI; the geometry sized
                // `words` so that every block's reads (`p + offset + span` for each tap,
                // each group) are inside it, and `weights` holds `taps * groups * CO_BLOCK`
                // words.
                unsafe { avx512::block(words, p, g, weights, &scales, &mut rows) };
            } else {
                layout::block_scalar(words, p, g, weights, &scales, &mut rows);
            }
            for (lane, row) in rows[..lanes].iter().enumerate() {
                g.scatter_block(
                    p,
                    &row[..span],
                    &mut planes[lane * plane..(lane + 1) * plane],
                );
            }
            p += span;
        }
    }

    /// The planes of output channels `first..` (a block of 32) in blocks of `per_block`
    /// output positions.
    fn fill_channels(
        &self,
        words: &[u32],
        g: &Geometry,
        per_block: usize,
        first: usize,
        planes: &mut [f32],
        vectorised: bool,
    ) {
        use channel_lanes::{CHANNELS, MAX_POSITIONS};
        let plane = g.out_h * g.out_w;
        let taps = g.taps.len();
        let block = first / CHANNELS;
        let weights = &self.channel_weights[block * taps * g.groups * CHANNELS..]
            [..taps * g.groups * CHANNELS];
        let scales = channel_lanes::ChannelScales::of(&self.zero_sums, &self.scales, first);
        let mut tile = [[0f32; CHANNELS]; MAX_POSITIONS];
        let mut q = 0;
        while q < plane {
            let flat = channel_lanes::flat_positions(g, q, per_block);
            let flat = &flat[..per_block];
            if vectorised {
                // SAFETY: `available()` found AVX-512 F, BW and VNNI; 8 <= per_block <= 12;
                // every position is an output's (`flat_positions`), whose words the
                // geometry holds for every tap and group; the block's weights are
                // `taps * groups * 32` words.
                unsafe { avx512::channel_block(words, flat, g, weights, &scales, &mut tile) };
            } else {
                channel_lanes::block_scalar(words, flat, g, weights, &scales, &mut tile);
            }
            let real = per_block.min(plane - q);
            for (lane, dst) in planes.chunks_exact_mut(plane).enumerate() {
                for (j, d) in dst[q..q + real].iter_mut().enumerate() {
                    *d = tile[j][lane];
                }
            }
            q += per_block;
        }
    }

    /// Applies the ops taken over to `planes`, the finished output planes of channels
    /// `first..`: the epilogue, then the FakeQuantize (its channel's ranges), then the
    /// residual with `addend`, the other input's same planes. For a `levels` output, the
    /// last FakeQuantize is left to the levels pass.
    fn finish(
        &self,
        planes: &mut [f32],
        first: usize,
        plane: usize,
        addend: Option<Addend>,
        levels: bool,
    ) {
        let plane = plane.max(1);
        if let Some(e) = &self.epilogue {
            let layout = Channels::Planes {
                channels: self.out_channels,
                plane,
            };
            e.apply_at(planes, first * plane, layout);
        }
        let last_is_levels = levels && self.residual.is_none();
        if !last_is_levels {
            FakeQuantizeRange::apply_to_planes(&self.quantize, planes, first, plane);
        }
        if let (Some(r), Some(a)) = (&self.residual, addend) {
            match levels {
                true => r.add(planes, a),
                false => r.apply_at(planes, a, first, plane),
            }
        }
    }
}

/// An int8 convolution's input: f32 values, or their levels.
#[derive(Clone, Copy)]
enum Source<'a> {
    Values(&'a [f32]),
    Levels(&'a [u8]),
}

/// Where an image's finished planes go: as f32, or as the levels of a range.
enum Out<'a> {
    Values(&'a mut [f32]),
    Levels(&'a mut [u8], &'a FakeQuantizeRange),
}

/// `q`'s level of each of `src` into `dst`; whether one was NaN.
fn to_levels(q: &FakeQuantizeRange, src: &[f32], dst: &mut [u8], vectorised: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if vectorised {
        // SAFETY: `vectorised` holds only where `avx512::available()` found AVX-512 F (`run`
        // checks it); `src` and `dst` are a block's planes and their levels, one length.
        return unsafe { avx512::levels_into(q, &src[..dst.len()], dst) };
    }
    let _ = vectorised;
    q.levels_into(src, dst)
}

thread_local! {
    /// Each worker's f32 planes for a block of channels whose output is levels: kept from
    /// block to block, so that they stay in the core's cache.
    static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `f` on `len` f32 values of this thread's scratch (their contents are whatever the last
/// user left: `f` writes each before reading it).
fn with_scratch(len: usize, f: impl FnOnce(&mut [f32])) {
    let mut planes = SCRATCH.take();
    if planes.len() < len {
        planes.resize(len, 0.0);
    }
    f(&mut planes[..len]);
    SCRATCH.set(planes);
}

impl Prepared for Int8Conv {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if self.residual.is_some() {
            let [data, addend] = take_inputs::<2>(inputs, "int8 Convolution")?;
            return Ok(vec![Arc::new(self.run(&data, Some(&addend), true)?)]);
        }
        let [data] = take_inputs::<1>(inputs, "int8 Convolution")?;
        Ok(vec![Arc::new(self.run(&data, None, true)?)])
    }

    fn byte_size(&self) -> usize {
        let table = self.addend_levels.as_ref().map_or(0, |t| t.len());
        (self.weights.len()
            + self.channel_weights.len()
            + self.zero_sums.len()
            + self.scales.len()
            + table)
            * 4
    }

    fn set_epilogue(&mut self, e: &Epilogue) -> bool {
        e.keep_if_fits(&mut self.epilogue, self.out_channels, self.spatial.rank())
    }

    fn set_residual(&mut self, r: &Residual) -> bool {
        let fits = r.quantize.len() <= 1 || r.quantize.len() == self.out_channels;
        if fits {
            self.residual = Some(r.clone());
        }
        fits
    }

    fn set_levels_output(&mut self, q: &FakeQuantizeRange) -> bool {
        // The FakeQuantize whose levels are written is the last applied, if there is one.
        let last = match &self.residual {
            Some(r) => &r.quantize,
            None => &self.quantize,
        };
        let fits = (last.is_empty() || last == std::slice::from_ref(q))
            && q.input_low < q.input_high
            && q.last_level <= 255.0
            && q.last_level >= 1.0
            && (self.residual.is_none() || last.len() == 1);
        if fits {
            self.levels_out = Some(*q);
        }
        fits
    }

    fn set_levels_input(&mut self, slot: usize, q: &FakeQuantizeRange) -> bool {
        match slot {
            0 if self.levels.reads_levels_of(q) => self.levels_in = true,
            1 if self.residual.is_some() => self.addend_levels = Some(Box::new(q.level_values())),
            _ => return false,
        }
        true
    }

    fn set_output_quantize(&mut self, q: &[FakeQuantizeRange]) -> bool {
        let fits = q.len() == 1 || q.len() == self.out_channels;
        if fits {
            self.quantize = q.to_vec();
        }
        fits
    }
}
