//! What a GEMM-based kernel applies to its output as it finishes it, taken over from the ops
//! that followed it in the graph: an Add of a per-channel f32 constant (a bias) and then an
//! activation, ReLU or HSwish. The executor offers an epilogue to a prepared kernel
//! ([`crate::Prepared`]) only when those ops are the single readers of the values they take,
//! so the graph's result does not change; the kernel then saves their passes over memory
//! (PointPillars' linear layer writes 98 MB that the Add and the ReLU each read and wrote
//! again; MobileNetV3 has 19 HSwish layers after convolutions).
//!
//! Each element gets exactly what the ops compute: `x + bias[channel]` in f32, then ReLU's
//! `x` if `x > 0` or NaN, else `+0`, or HSwish's `x * min(max(x + 3, 0), 6) / 6` with a NaN
//! kept through the min and max. Results are bit-identical to the unfused graph.
use irun_tensor::Tensor;

use crate::error::{codes, OpError};
use crate::par;
use crate::quantize::FakeQuantizeRange;
use crate::simd;

/// Bias (by output channel) and an activation, in that order; at least one of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Epilogue {
    pub bias: Option<Vec<f32>>,
    /// The output dim the bias runs along, counted from the last (0): a kernel takes the
    /// bias only along its channel dim.
    pub bias_axis_from_end: usize,
    pub activation: Activation,
}

/// The op an epilogue ends with, if any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    #[default]
    None,
    /// ReLU-1.
    Relu,
    /// HSwish-4.
    HSwish,
}

impl Activation {
    /// ReLU-1: `x` if `x > 0` or NaN, else `+0`.
    #[inline(always)]
    fn relu(x: f32) -> f32 {
        if x.is_nan() || x > 0.0 {
            x
        } else {
            0.0
        }
    }

    /// HSwish-4: `x * min(max(x + 3, 0), 6) / 6` in f32, each of the max and min keeping a
    /// NaN `x + 3` (a comparison with NaN is false), as the op computes it.
    #[inline(always)]
    fn hswish(x: f32) -> f32 {
        let t = x + 3.0;
        let t = if 0.0 > t { 0.0 } else { t };
        let t = if 6.0 < t { 6.0 } else { t };
        x * t / 6.0
    }
}

/// How an output's elements map to channels.
#[derive(Clone, Copy, Debug)]
pub enum Channels {
    /// Channel `i % n`: a matrix product's output columns.
    Inner(usize),
    /// Channel `(i / plane) % channels`: a convolution's `[N, C, *spatial]` output.
    Planes { channels: usize, plane: usize },
}

impl Epilogue {
    /// Whether it does anything.
    pub fn is_empty(&self) -> bool {
        self.bias.is_none() && self.activation == Activation::None
    }

    /// Whether a kernel with `channels` output channels along the dim `axis_from_end` from
    /// the last can apply it: no bias, or one value per channel along that dim.
    pub fn fits(&self, channels: usize, axis_from_end: usize) -> bool {
        match &self.bias {
            None => true,
            Some(b) => {
                b.len() == channels && (self.bias_axis_from_end == axis_from_end || channels == 1)
            }
        }
    }

    /// The bias and activation of an epilogue that may be absent (none, and no activation),
    /// for a kernel that applies them itself.
    pub fn parts(epilogue: Option<&Epilogue>) -> (Option<&[f32]>, Activation) {
        match epilogue {
            Some(e) => (e.bias.as_deref(), e.activation),
            None => (None, Activation::None),
        }
    }

    /// A kernel's [`crate::Prepared::set_epilogue`]: a copy of it kept in `slot` when it
    /// [`Self::fits`] the kernel's `channels` along `axis_from_end`; whether it was.
    pub fn keep_if_fits(
        &self,
        slot: &mut Option<Epilogue>,
        channels: usize,
        axis_from_end: usize,
    ) -> bool {
        let fits = self.fits(channels, axis_from_end);
        if fits {
            *slot = Some(self.clone());
        }
        fits
    }

    /// Applies it to `t`, an output that must be f32 and hold its own values (a kernel's
    /// fresh output, or `kernel::take_or_copy` of one): a kernel offers to take over only
    /// f32 Adds and ReLUs, so any other type is an internal error.
    pub fn apply_to(&self, t: &mut Tensor, layout: Channels) -> Result<(), OpError> {
        let ty = t.element_type();
        let v = t.values_mut::<f32>().ok_or_else(|| {
            OpError::new(
                codes::INTERNAL,
                format!("an epilogue on a {ty} output, not f32"),
            )
        })?;
        self.apply(v, layout);
        Ok(())
    }

    /// Applies it to a whole output, in parallel. `data.len()` must be a whole number of
    /// channel rows (checked by the caller's shapes): the bias is indexed modulo its length.
    pub fn apply(&self, data: &mut [f32], layout: Channels) {
        if self.is_empty() || data.is_empty() {
            return;
        }
        let row = match layout {
            Channels::Inner(n) => n,
            Channels::Planes { plane, .. } => plane,
        }
        .max(1);
        // Whole rows per task, so each task knows its rows' channels from its start.
        let grain = crate::par::PAR_MIN_ELEMENTS.div_ceil(row) * row;
        par::for_each_split_mut(data, grain, &|start, chunk| {
            self.apply_at(chunk, start, layout);
        });
    }

    /// Applies it to `chunk`, the elements of the output from flat position `start`, on the
    /// calling thread (a kernel calls it on each block it has just written, still in cache).
    pub fn apply_at(&self, chunk: &mut [f32], start: usize, layout: Channels) {
        // One loop per activation, so that each vectorises without a test per element.
        match self.activation {
            Activation::None => self.apply_with(chunk, start, layout, |x| x),
            Activation::Relu => self.apply_with(chunk, start, layout, Activation::relu),
            Activation::HSwish => self.apply_with(chunk, start, layout, Activation::hswish),
        }
    }

    #[inline(always)]
    fn apply_with(
        &self,
        chunk: &mut [f32],
        start: usize,
        layout: Channels,
        act: impl Fn(f32) -> f32 + Copy,
    ) {
        simd::widest(
            #[inline(always)]
            || match (&self.bias, layout) {
                (None, _) => simd::map_each(chunk, act),
                (Some(bias), Channels::Inner(n)) => {
                    // Rows of `n`, the first possibly partial.
                    let mut j = start % n.max(1);
                    let mut rest = &mut chunk[..];
                    while !rest.is_empty() {
                        let take = (n - j).min(rest.len());
                        let (head, tail) = rest.split_at_mut(take);
                        for (x, &b) in head.iter_mut().zip(&bias[j..]) {
                            *x = act(*x + b);
                        }
                        rest = tail;
                        j = 0;
                    }
                }
                (Some(bias), Channels::Planes { channels, plane }) => {
                    let plane = plane.max(1);
                    let mut at = start;
                    let mut rest = &mut chunk[..];
                    while !rest.is_empty() {
                        let take = (plane - at % plane).min(rest.len());
                        let b = bias[(at / plane) % channels.max(1)];
                        let (head, tail) = rest.split_at_mut(take);
                        for x in head.iter_mut() {
                            *x = act(*x + b);
                        }
                        rest = tail;
                        at += take;
                    }
                }
            },
        )
    }
}

/// A residual connection after a kernel's epilogue (and the FakeQuantize it took, if any):
/// an Add-1 of another tensor of the output's shape, then a ReLU-1 and a FakeQuantize-1 of
/// one range or one per channel if they follow, each the one reader of the value before it.
/// The kernel's output may be either input of the Add: f32 addition is commutative.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Residual {
    pub relu: bool,
    /// Empty when no FakeQuantize follows.
    pub quantize: Vec<FakeQuantizeRange>,
}

/// The other input of a residual Add at the positions being finished: its f32 values, or
/// the levels of a FakeQuantize standing for them, with the value of each level
/// ([`FakeQuantizeRange::level_values`]).
#[derive(Clone, Copy, Debug)]
pub enum Addend<'a> {
    Values(&'a [f32]),
    Levels(&'a [u8], &'a [f32; 256]),
}

impl Addend<'_> {
    /// The same addend from element `start`, `len` of them.
    pub fn range(self, start: usize, len: usize) -> Self {
        match self {
            Addend::Values(v) => Addend::Values(&v[start..start + len]),
            Addend::Levels(k, q) => Addend::Levels(&k[start..start + len], q),
        }
    }
}

impl Residual {
    /// Applies it to `planes` (whole channel planes of `plane` values from channel `first`),
    /// with `addend` the other tensor's values at the same positions.
    pub fn apply_at(&self, planes: &mut [f32], addend: Addend, first: usize, plane: usize) {
        self.add(planes, addend);
        FakeQuantizeRange::apply_to_planes(&self.quantize, planes, first, plane);
    }

    /// The Add and the ReLU, without the FakeQuantize: for a kernel that writes the
    /// FakeQuantize's levels itself.
    pub fn add(&self, planes: &mut [f32], addend: Addend) {
        simd::widest(
            #[inline(always)]
            || match addend {
                Addend::Values(values) => self.add_values(planes, values),
                Addend::Levels(levels, table) => {
                    #[cfg(target_arch = "x86_64")]
                    if simd::unit() == simd::Unit::Avx512 {
                        // SAFETY: `unit()` found AVX-512 F.
                        unsafe { add_levels_avx512(planes, levels, table, self.relu) };
                        return;
                    }
                    // A run of values at a time, looked up: computing each level's value
                    // (a division) cost more than the add and the FakeQuantize together.
                    const RUN: usize = 64;
                    let mut values = [0f32; RUN];
                    for (ys, ks) in planes.chunks_mut(RUN).zip(levels.chunks(RUN)) {
                        for (v, &k) in values.iter_mut().zip(ks) {
                            *v = table[usize::from(k)];
                        }
                        self.add_values(ys, &values[..ks.len()]);
                    }
                }
            },
        );
    }

    #[inline(always)]
    fn add_values(&self, planes: &mut [f32], addend: &[f32]) {
        match self.relu {
            true => {
                for (y, &r) in planes.iter_mut().zip(addend) {
                    *y = Activation::relu(*y + r);
                }
            }
            false => {
                for (y, &r) in planes.iter_mut().zip(addend) {
                    *y += r;
                }
            }
        }
    }
}

/// [`Residual::add`] of an addend given as levels on AVX-512: sixteen levels widened and
/// their values gathered from the table at once (the table lookups one at a time were most
/// of a residual layer's epilogue), added, and the ReLU as [`Activation::relu`] (a value
/// kept if above zero or NaN, else +0).
///
/// # Safety
/// AVX-512 F must be available.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_levels_avx512(planes: &mut [f32], levels: &[u8], table: &[f32; 256], relu: bool) {
    use std::arch::x86_64::*;
    let n = planes.len().min(levels.len());
    let (y, k) = (planes.as_mut_ptr(), levels.as_ptr());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n`, within both slices; each gathered index is a level, below
        // 256, within the table.
        unsafe {
            let index = _mm512_cvtepu8_epi32(_mm_loadu_si128(k.add(i).cast()));
            let addend = _mm512_i32gather_ps::<4>(index, table.as_ptr());
            let mut sum = _mm512_add_ps(_mm512_loadu_ps(y.add(i)), addend);
            if relu {
                let kept = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(sum, _mm512_setzero_ps());
                sum = _mm512_maskz_mov_ps(kept, sum);
            }
            _mm512_storeu_ps(y.add(i), sum);
        }
        i += 16;
    }
    for (y, &k) in planes[i..n].iter_mut().zip(&levels[i..n]) {
        let sum = *y + table[usize::from(k)];
        *y = if relu { Activation::relu(sum) } else { sum };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each layout, start and activation, against the ops' definitions element by element,
    /// with NaN, -0, infinities, values around HSwish's bends (-3, 3) and negative values.
    #[test]
    fn applies_the_add_then_the_activation_as_the_ops_do() {
        let data: Vec<f32> = (0..60)
            .map(|i| match i % 7 {
                0 => f32::NAN,
                1 => -0.0,
                2 if i % 3 == 0 => f32::INFINITY,
                2 if i % 3 == 1 => f32::NEG_INFINITY,
                3 => [-3.25, -3.0, -2.75, 2.75, 3.0, 3.25][i % 6],
                _ => (i as f32 * 0.77).sin() * 5.0,
            })
            .collect();
        let bias = vec![0.25, -0.5, 1.5];
        // The ops' definitions, written out again: ReLU keeps NaN and positive values, HSwish
        // is `x * min(max(x + 3, 0), 6) / 6` with NaN kept (IEEE min/max would drop it).
        let activate = |act: Activation, v: f32| match act {
            Activation::None => v,
            Activation::Relu if v.is_nan() || v > 0.0 => v,
            Activation::Relu => 0.0,
            Activation::HSwish if v.is_nan() => v,
            Activation::HSwish => v * (v + 3.0).clamp(0.0, 6.0) / 6.0,
        };
        for act in [Activation::None, Activation::Relu, Activation::HSwish] {
            for with_bias in [false, true] {
                let e = Epilogue {
                    bias: with_bias.then(|| bias.clone()),
                    bias_axis_from_end: 0,
                    activation: act,
                };
                for (layout, channel) in [
                    (
                        Channels::Inner(3),
                        Box::new(|i: usize| i % 3) as Box<dyn Fn(usize) -> usize>,
                    ),
                    (
                        Channels::Planes {
                            channels: 3,
                            plane: 4,
                        },
                        Box::new(|i: usize| (i / 4) % 3),
                    ),
                ] {
                    let want: Vec<u32> = data
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| {
                            let v = if with_bias { x + bias[channel(i)] } else { x };
                            activate(act, v).to_bits()
                        })
                        .collect();
                    let mut whole = data.clone();
                    e.apply(&mut whole, layout);
                    assert_eq!(whole.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
                    // From an offset that is not a row start.
                    let mut part = data[5..].to_vec();
                    e.apply_at(&mut part, 5, layout);
                    assert_eq!(
                        part.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        want[5..]
                    );
                }
            }
        }
    }

    /// The residual's Add, ReLU and per-channel FakeQuantize against the
    /// ops element by element, on planes that start at channel 2 of 5.
    #[test]
    fn residual_adds_then_activates_then_quantizes_from_its_first_channel() {
        let plane = 6;
        let y: Vec<f32> = (0..3 * plane)
            .map(|i| [f32::NAN, -0.0, 0.3, -0.7, 1.9, 0.55][i % 6] + 0.01 * i as f32)
            .collect();
        let r: Vec<f32> = (0..3 * plane).map(|i| 0.2 - 0.05 * i as f32).collect();
        let ranges: Vec<FakeQuantizeRange> = (0..5)
            .map(|c| FakeQuantizeRange {
                input_low: -0.5,
                input_high: 0.5 + 0.25 * c as f32,
                output_low: -0.5,
                output_high: 0.5 + 0.25 * c as f32,
                last_level: 15.0,
            })
            .collect();
        for relu in [true, false] {
            for quantize in [Vec::new(), ranges.clone()] {
                let res = Residual {
                    relu,
                    quantize: quantize.clone(),
                };
                let mut got = y.clone();
                res.apply_at(&mut got, Addend::Values(&r), 2, plane);
                for (i, (&g, (&a, &b))) in got.iter().zip(y.iter().zip(&r)).enumerate() {
                    let sum = a + b;
                    // ReLU-1 written out again: NaN and positive values kept, else +0.
                    let act = match relu {
                        true if !(sum.is_nan() || sum > 0.0) => 0.0,
                        _ => sum,
                    };
                    let want = match quantize.get(2 + i / plane) {
                        Some(q) => q.apply(act),
                        None => act,
                    };
                    assert_eq!(g.to_bits(), want.to_bits(), "{relu} {i}");
                }
            }
        }
    }

    /// An addend of levels adds each level's value, as an addend of those values would.
    #[test]
    fn an_addend_of_levels_adds_their_values() {
        let q = FakeQuantizeRange {
            input_low: -1.0,
            input_high: 2.0,
            output_low: -0.75,
            output_high: 1.5,
            last_level: 255.0,
        };
        // Whole vectors of 16 and a partial one; NaN, and sums at and around zero.
        let levels: Vec<u8> = (0..40).map(|i| (i * 67 % 256) as u8).collect();
        let values: Vec<f32> = levels.iter().map(|&k| q.value_of_level(k)).collect();
        let y: Vec<f32> = (0..40)
            .map(|i| match i % 9 {
                0 => f32::NAN,
                1 => -values[i],
                2 => -0.0,
                _ => 0.1 * i as f32 - 2.0,
            })
            .collect();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for relu in [true, false] {
            let res = Residual {
                relu,
                quantize: vec![q],
            };
            let (mut got, mut want) = (y.clone(), y.clone());
            res.add(&mut got, Addend::Levels(&levels, &q.level_values()));
            res.add(&mut want, Addend::Values(&values));
            assert_eq!(bits(&got), bits(&want), "relu {relu}");
            let (mut got, mut want) = (y.clone(), y.clone());
            res.apply_at(&mut got, Addend::Levels(&levels, &q.level_values()), 0, 8);
            res.apply_at(&mut want, Addend::Values(&values), 0, 8);
            assert_eq!(bits(&got), bits(&want), "relu {relu}");
        }
    }
}
