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

use irun_opkit::epilogue::{Channels, Epilogue, Residual};
use irun_opkit::quantize::{level_f32, FakeQuantizeRange};
use irun_tensor::Tensor;

use crate::op::{codes, take_inputs, OpError, Prepared, Value};
use crate::spatial::Spatial;
use layout::{BlockScales, Geometry};

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
        let l = (self.levels - 1) as f32;
        if x <= self.input_low {
            0.0
        } else if x > self.input_high {
            l
        } else {
            level_f32(x, self.input_low, self.input_high, l)
        }
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
        })
    }

    /// Whether this CPU runs the kernel at speed (AVX-512 with VNNI); elsewhere it runs, exactly
    /// the same, one product at a time, and the executor keeps the f32 graph instead.
    pub fn fast_here() -> bool {
        avx512::available()
    }

    /// The output for `data` `[N, Cin, H, W]` f32, and the residual Add's other input when
    /// the kernel took one over (`[N, Cout, OH, OW]` f32).
    pub fn run(
        &self,
        data: &Tensor,
        addend: Option<&Tensor>,
        vectorised: bool,
    ) -> Result<Tensor, OpError> {
        let shape = data.shape();
        let x = data.values::<f32>().ok_or_else(|| {
            OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!(
                    "int8 Convolution: the input is {}, not f32",
                    data.element_type()
                ),
            )
        })?;
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
            (Some(_), Some(t)) if t.shape() == [n, co, g.out_h, g.out_w] => {
                Some(t.values::<f32>().ok_or_else(|| {
                    OpError::new(
                        codes::UNSUPPORTED_TYPE,
                        "int8 Convolution: the residual input is not f32",
                    )
                })?)
            }
            _ => {
                return Err(OpError::new(
                    codes::RUN_SHAPE,
                    "int8 Convolution: the residual input does not match the output",
                ))
            }
        };
        let len = n
            .checked_mul(co)
            .and_then(|v| v.checked_mul(plane))
            .ok_or_else(|| OpError::new(codes::RUN_SHAPE, "int8 Convolution: output too large"))?;
        // Zeroed by all threads, a channel plane at a time (each slot is then written by the
        // kernel): a one-thread memset of every output was 2-3% of ResNet-18's time.
        let mut out = irun_opkit::par::build(len, plane.max(1), &|_, filler| {
            filler.repeat(0.0, filler.remaining())
        })?;
        let vectorised = vectorised && avx512::available();
        for image in 0..n {
            let src = &x[image * ci * h * w..(image + 1) * ci * h * w];
            let words = layout::quantize(src, ci, &g, &self.levels, self.zero, vectorised)?;
            let dst = &mut out[image * co * plane..(image + 1) * co * plane];
            // An output the spread below sets to NaN is NaN after the residual too.
            let image_addend = addend.map(|a| &a[image * co * plane..(image + 1) * co * plane]);
            match channel_lanes::positions_per_block(&g, co) {
                Some(per_block) => self.convolve_channels(
                    &words.words,
                    &g,
                    per_block,
                    (dst, image_addend),
                    vectorised,
                ),
                None => self.convolve(&words.words, &g, (dst, image_addend), vectorised),
            }
            if words.nan {
                layout::spread_nan(src, ci, &g, dst);
            }
        }
        Tensor::from_f32(vec![n, co, g.out_h, g.out_w], out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// One image: every output channel block on its own task, position blocks in order;
    /// `out` with the residual's values for it, if the kernel adds them.
    fn convolve(
        &self,
        words: &[u32],
        g: &Geometry,
        (out, addend): (&mut [f32], Option<&[f32]>),
        vectorised: bool,
    ) {
        let plane = g.out_h * g.out_w;
        let span = g.span();
        let taps = g.taps.len();
        let co = self.out_channels;
        irun_opkit::par::for_each_chunk_mut(out, CO_BLOCK * plane.max(1), &|start, chunk| {
            let block = start / (CO_BLOCK * plane.max(1));
            let first = block * CO_BLOCK;
            let weights =
                &self.weights[block * taps * g.groups * CO_BLOCK..][..taps * g.groups * CO_BLOCK];
            let scales = BlockScales::of(&self.zero_sums, &self.scales, first);
            let lanes = CO_BLOCK.min(co - first);
            let mut rows = [[0f32; layout::MAX_SPAN]; CO_BLOCK];
            let mut p = 0;
            while p < g.positions {
                if vectorised {
                    // SAFETY: `available()` found AVX-512 F, BW and VNNI; the geometry
                    // sized `words` so that every block's reads (`p + offset + span` for
                    // each tap, each group) are inside it, and `weights` holds
                    // `taps * groups * CO_BLOCK` words.
                    unsafe { avx512::block(words, p, g, weights, &scales, &mut rows) };
                } else {
                    layout::block_scalar(words, p, g, weights, &scales, &mut rows);
                }
                for (lane, row) in rows[..lanes].iter().enumerate() {
                    g.scatter_block(
                        p,
                        &row[..span],
                        &mut chunk[lane * plane..(lane + 1) * plane],
                    );
                }
                p += span;
            }
            self.finish(
                chunk,
                first,
                plane,
                addend.map(|a| &a[start..start + chunk.len()]),
            );
        });
    }

    /// Applies the ops taken over to `planes`, the finished output planes of channels
    /// `first..`: the epilogue, then the FakeQuantize (its channel's ranges), then the
    /// residual with `addend`, the other input's same planes.
    fn finish(&self, planes: &mut [f32], first: usize, plane: usize, addend: Option<&[f32]>) {
        let plane = plane.max(1);
        if let Some(e) = &self.epilogue {
            let layout = Channels::Planes {
                channels: self.out_channels,
                plane,
            };
            e.apply_at(planes, first * plane, layout);
        }
        FakeQuantizeRange::apply_to_planes(&self.quantize, planes, first, plane);
        if let (Some(r), Some(a)) = (&self.residual, addend) {
            r.apply_at(planes, a, first, plane);
        }
    }

    /// One image in blocks of 32 output channels by `per_block` output positions, each
    /// block of channels on its own task.
    fn convolve_channels(
        &self,
        words: &[u32],
        g: &Geometry,
        per_block: usize,
        (out, addend): (&mut [f32], Option<&[f32]>),
        vectorised: bool,
    ) {
        use channel_lanes::{CHANNELS, MAX_POSITIONS};
        let plane = g.out_h * g.out_w;
        let taps = g.taps.len();
        irun_opkit::par::for_each_chunk_mut(out, CHANNELS * plane.max(1), &|start, chunk| {
            let first = start / plane.max(1);
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
                    // SAFETY: `available()` found AVX-512 F, BW and VNNI; 8 <= per_block <=
                    // 12; every position is an output's (`flat_positions`), whose words
                    // the geometry holds for every tap and group; the block's weights
                    // are `taps * groups * 32` words.
                    unsafe { avx512::channel_block(words, flat, g, weights, &scales, &mut tile) };
                } else {
                    channel_lanes::block_scalar(words, flat, g, weights, &scales, &mut tile);
                }
                let real = per_block.min(plane - q);
                for (lane, dst) in chunk.chunks_exact_mut(plane).enumerate() {
                    for (j, d) in dst[q..q + real].iter_mut().enumerate() {
                        *d = tile[j][lane];
                    }
                }
                q += per_block;
            }
            self.finish(
                chunk,
                first,
                plane,
                addend.map(|a| &a[start..start + chunk.len()]),
            );
        });
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
        (self.weights.len() + self.channel_weights.len() + self.zero_sums.len() + self.scales.len())
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

    fn set_output_quantize(&mut self, q: &[FakeQuantizeRange]) -> bool {
        let fits = q.len() == 1 || q.len() == self.out_channels;
        if fits {
            self.quantize = q.to_vec();
        }
        fits
    }
}
