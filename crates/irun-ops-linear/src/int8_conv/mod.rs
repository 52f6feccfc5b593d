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
mod finish;
mod layout;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod tile_bytes;

use std::sync::Arc;

use std::sync::atomic::{AtomicBool, Ordering};

use irun_opkit::epilogue::{Addend, Channels, Epilogue, Residual};
use irun_opkit::quantize::FakeQuantizeRange;
use irun_tensor::Tensor;

use crate::op::{codes, take_inputs, OpError, Prepared, Value};
use crate::spatial::Spatial;
use channel_lanes::{CHANNELS, MAX_POSITIONS};
use finish::{LevelsFinish, Run};
use layout::{BlockScales, Geometry, MAX_SPAN};

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
    /// That addend's range, where the vector pass may compute those values by the
    /// reciprocal ([`finish::exact_by_reciprocal`]).
    addend_range: Option<FakeQuantizeRange>,
    /// Whether `quantize` is one range whose quotients the vector pass may take by the
    /// reciprocal.
    quantize_by_reciprocal: bool,
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
            addend_range: None,
            quantize_by_reciprocal: false,
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
        // Every image's words first (a quarter of the input's bytes, padded), so that one
        // parallel pass writes the whole output.
        let images = (0..n)
            .map(|image| {
                let at = image * ci * h * w..(image + 1) * ci * h * w;
                match src {
                    Source::Values(x) => {
                        layout::quantize(&x[at], ci, &g, &self.levels, self.zero, vectorised)
                    }
                    Source::Levels(k) => {
                        layout::quantize(&k[at], ci, &g, &self.levels, self.zero, vectorised)
                    }
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let work = Work {
            images: &images,
            g: &g,
            lanes: channel_lanes::positions_per_block(&g, co),
            addend,
            vectorised,
            co,
        };
        let shape = vec![n, co, g.out_h, g.out_w];
        // A NaN input or output has no level: the f32 output below instead.
        if let (Some(q), false) = (&self.levels_out, images.iter().any(|i| i.nan)) {
            if let Some(out) = self.convolve_to_levels(&work, q, len)? {
                return Tensor::from_values(shape, out)
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()));
            }
        }
        let mut out = irun_opkit::par::build(len, work.grain(), &|start, filler| {
            // Zeroed by the task that writes it, while in its cache (the kernel then writes
            // each slot): a one-thread memset of every output first was 2-3% of ResNet-18's
            // time, and a pass of its own by all threads cost a parallel region per layer.
            let chunk = filler.repeat_mut(0.0, filler.remaining());
            work.for_each_piece(start, chunk, &|image, at, planes| {
                let (plane, first) = (work.plane(), at / work.plane());
                self.fill(&work, image, first, &mut |sums| match sums {
                    Sums::Rows(rows, runs) => {
                        for (lane, row) in rows.iter().enumerate() {
                            for run in runs {
                                planes[lane * plane + run.at..][..run.len]
                                    .copy_from_slice(&row[run.row..run.row + run.len]);
                            }
                        }
                    }
                    Sums::Tile(tile, real, at) => {
                        channel_lanes::tile_into_planes(tile, real, at, plane, planes)
                    }
                });
                let addend = work.addend_at(image, at, planes.len());
                self.finish(planes, first, plane, addend, false);
            });
        })?;
        if let Source::Values(x) = src {
            for image in (0..n).filter(|&i| images[i].nan) {
                // An output the spread sets to NaN is NaN after the residual too.
                let src = &x[image * ci * h * w..(image + 1) * ci * h * w];
                let dst = &mut out[image * co * plane..(image + 1) * co * plane];
                layout::spread_nan(src, ci, &g, dst);
            }
        }
        Tensor::from_f32(shape, out).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// The output as the levels of `q` (`len` of them), each run of sums finished as the
    /// kernel leaves it ([`LevelsFinish`]); None if an output was NaN (it has no level).
    fn convolve_to_levels(
        &self,
        work: &Work,
        q: &FakeQuantizeRange,
        len: usize,
    ) -> Result<Option<Vec<u8>>, OpError> {
        let plane = work.plane();
        let finish = LevelsFinish::new(self, q, plane, work.vectorised);
        let nan = AtomicBool::new(false);
        let out = irun_opkit::par::build(len, work.grain(), &|start, filler| {
            let chunk = filler.repeat_mut(0u8, filler.remaining());
            work.for_each_piece(start, chunk, &|image, at, levels| {
                let first = at / plane;
                let addend = work.addend_at(image, at, levels.len());
                let channels = finish.channels(first, levels.len() / plane);
                let mut any_nan = false;
                self.fill(work, image, first, &mut |sums| {
                    any_nan |= match sums {
                        Sums::Rows(rows, runs) => channels.block(rows, runs, addend, levels),
                        Sums::Tile(tile, real, at) => channels.tile(tile, real, at, addend, levels),
                    };
                });
                if any_nan {
                    nan.store(true, Ordering::Relaxed);
                }
            });
        })?;
        Ok((!nan.into_inner()).then_some(out))
    }

    /// One task's output channels (from `first`, a block) of `image`: each block of sums
    /// handed to `emit`.
    fn fill(&self, work: &Work, image: usize, first: usize, emit: &mut dyn FnMut(Sums)) {
        let words = &work.images[image].words;
        match work.lanes {
            Some(per_block) => {
                self.fill_channels(words, work.g, per_block, first, work.vectorised, emit)
            }
            None => self.fill_positions(words, work.g, first, work.vectorised, emit),
        }
    }

    /// [`Self::fill`] in position blocks ([`CO_BLOCK`] channels from `first`), in order.
    fn fill_positions(
        &self,
        words: &[u32],
        g: &Geometry,
        first: usize,
        vectorised: bool,
        emit: &mut dyn FnMut(Sums),
    ) {
        let span = g.span();
        let taps = g.taps.len();
        let block = first / CO_BLOCK;
        let weights =
            &self.weights[block * taps * g.groups * CO_BLOCK..][..taps * g.groups * CO_BLOCK];
        let scales = BlockScales::of(&self.zero_sums, &self.scales, first);
        let lanes = CO_BLOCK.min(self.out_channels - first);
        let mut rows = [[0f32; MAX_SPAN]; CO_BLOCK];
        // Every run holds at least one position of the block.
        let mut runs = [Run::default(); MAX_SPAN];
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
            let mut count = 0;
            g.for_each_run(p, span, |row, at, len| {
                runs[count] = Run { row, at, len };
                count += 1;
            });
            emit(Sums::Rows(&mut rows[..lanes], &runs[..count]));
            p += span;
        }
    }

    /// [`Self::fill`] with 32 channels (from `first`) in the lanes, in blocks of
    /// `per_block` output positions.
    fn fill_channels(
        &self,
        words: &[u32],
        g: &Geometry,
        per_block: usize,
        first: usize,
        vectorised: bool,
        emit: &mut dyn FnMut(Sums),
    ) {
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
            emit(Sums::Tile(&tile, real, q));
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

/// A block of sums as a kernel leaves it.
enum Sums<'a> {
    /// `rows[lane]` holds sums of channel `first + lane` (the task's first), and each run
    /// (the same in every row) places some of them in the channel's plane.
    Rows(&'a mut [[f32; MAX_SPAN]], &'a [Run]),
    /// `tile[j][lane]` is the sum of channel `first + lane` at position `at + j` of its
    /// plane, for `j < real`: `Tile(tile, real, at)`.
    Tile(&'a [[f32; CHANNELS]; MAX_POSITIONS], usize, usize),
}

/// An int8 convolution's input: f32 values, or their levels.
#[derive(Clone, Copy)]
enum Source<'a> {
    Values(&'a [f32]),
    Levels(&'a [u8]),
}

/// What every task of one run reads: the images' words, their geometry and blocking, and
/// the residual's other input.
struct Work<'a> {
    images: &'a [layout::Quantized],
    g: &'a Geometry,
    /// Positions per block when the channel lanes compute the planes.
    lanes: Option<usize>,
    addend: Option<Addend<'a>>,
    vectorised: bool,
    /// Output channels.
    co: usize,
}

impl Work<'_> {
    fn plane(&self) -> usize {
        (self.g.out_h * self.g.out_w).max(1)
    }

    /// Output values per task: the planes of one block of output channels.
    fn per_task(&self) -> usize {
        let channels = match self.lanes {
            Some(_) => channel_lanes::CHANNELS,
            None => CO_BLOCK,
        };
        channels * self.plane()
    }

    /// The parallel pass's grain: a task's planes, or whole images where an image is not a
    /// whole number of tasks (so that every chunk begins a block of channels).
    fn grain(&self) -> usize {
        let image_len = self.co * self.plane();
        match self.images.len() > 1 && !image_len.is_multiple_of(self.per_task()) {
            true => image_len,
            false => self.per_task(),
        }
    }

    /// Runs `f(image, at, piece)` on each task's piece of `chunk` (the output from element
    /// `start`, a multiple of [`Self::grain`]): `at` is the
    /// piece's first element in its image, where a block of channels begins, and a piece
    /// never crosses an image or a block.
    fn for_each_piece<T>(&self, start: usize, chunk: &mut [T], f: &dyn Fn(usize, usize, &mut [T])) {
        let (image_len, per_task) = (self.co * self.plane(), self.per_task());
        let mut rest = chunk;
        let mut pos = start;
        while !rest.is_empty() {
            let (image, at) = (pos / image_len, pos % image_len);
            debug_assert!(at.is_multiple_of(per_task));
            let len = per_task.min(image_len - at).min(rest.len());
            let (piece, tail) = rest.split_at_mut(len);
            f(image, at, piece);
            rest = tail;
            pos += len;
        }
    }

    /// The residual's other input at elements `at..at + len` of `image`.
    fn addend_at(&self, image: usize, at: usize, len: usize) -> Option<Addend<'_>> {
        self.addend
            .map(|a| a.range(image * self.co * self.plane() + at, len))
    }
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
        // The FakeQuantize whose levels are written is the last applied, if there is one;
        // with none taken over, the readers' own (each quantizes this output by `q`).
        let last = match &self.residual {
            Some(r) => &r.quantize,
            None => &self.quantize,
        };
        let fits = (last.is_empty() || last == std::slice::from_ref(q))
            && q.input_low < q.input_high
            && q.last_level <= 255.0
            && q.last_level >= 1.0;
        if fits {
            self.levels_out = Some(*q);
        }
        fits
    }

    fn set_levels_input(&mut self, slot: usize, q: &FakeQuantizeRange) -> bool {
        match slot {
            0 if self.levels.reads_levels_of(q) => self.levels_in = true,
            1 if self.residual.is_some() => {
                self.addend_levels = Some(Box::new(q.level_values()));
                self.addend_range = finish::exact_by_reciprocal(q.last_level).then_some(*q);
            }
            _ => return false,
        }
        true
    }

    fn set_output_quantize(&mut self, q: &[FakeQuantizeRange]) -> bool {
        let fits = q.len() == 1 || q.len() == self.out_channels;
        if fits {
            self.quantize = q.to_vec();
            self.quantize_by_reciprocal =
                q.len() == 1 && finish::exact_by_reciprocal(q[0].last_level);
        }
        fits
    }
}
