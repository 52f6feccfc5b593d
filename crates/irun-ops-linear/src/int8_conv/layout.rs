//! Where each word of the quantized input lives, the quantization pass that writes them, the
//! scalar form of a block's sums, and the moves from computed positions to the output.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use irun_opkit::simd;

use super::{ActivationLevels, CO_BLOCK};
use crate::op::{codes, OpError};
use crate::spatial::Spatial;

/// Outputs per vector (i32 lanes of a 512-bit register).
pub(super) const LANES: usize = 16;
/// Position vectors per block, at most: 3 x 8 accumulators, 3 inputs and a broadcast fill 28
/// of the 32 registers.
pub(super) const MAX_VECTORS: usize = 3;
pub(super) const MAX_SPAN: usize = LANES * MAX_VECTORS;

/// One image's layout for one input size.
#[derive(Debug)]
pub(super) struct Geometry {
    pub out_h: usize,
    pub out_w: usize,
    /// Words per row of a phase plane (the padded width over the column stride, rounded up).
    pub pitch: usize,
    /// Position vectors per block.
    pub vectors: usize,
    /// Positions computed: `out_h * pitch` rounded up to whole blocks.
    pub positions: usize,
    /// Channel groups of 4.
    pub groups: usize,
    /// Words per channel group: one plane per phase.
    pub group_stride: usize,
    /// Per tap (row-major over the kernel): its word offset inside a group.
    pub taps: Vec<usize>,
    in_h: usize,
    in_w: usize,
    pad_top: usize,
    pad_left: usize,
    strides: [usize; 2],
    dilations: [usize; 2],
    kernel: [usize; 2],
    /// The `(row, column)` phases some tap reads, in the order of their planes.
    phases: Vec<[usize; 2]>,
    /// Words per phase plane.
    plane: usize,
}

fn too_large() -> OpError {
    OpError::new(codes::RUN_SHAPE, "int8 Convolution: the input is too large")
}

impl Geometry {
    pub fn new(
        spatial: &Spatial,
        channels: usize,
        input: [usize; 2],
        kernel: [usize; 2],
    ) -> Result<Geometry, OpError> {
        let (pad_top, pad_bottom, out_h) = spatial.dim(0, input[0], kernel[0])?;
        let (pad_left, pad_right, out_w) = spatial.dim(1, input[1], kernel[1])?;
        let strides = [spatial.strides[0], spatial.strides[1]];
        let dilations = [spatial.dilations[0], spatial.dilations[1]];
        let padded_h = input[0] + pad_top + pad_bottom;
        let padded_w = input[1] + pad_left + pad_right;
        let rows = padded_h.div_ceil(strides[0]);
        let pitch = padded_w.div_ceil(strides[1]);
        let mut phases: Vec<[usize; 2]> = Vec::new();
        let mut inner = Vec::new();
        for i in 0..kernel[0] {
            for j in 0..kernel[1] {
                let (r, c) = (i * dilations[0], j * dilations[1]);
                let phase = [r % strides[0], c % strides[1]];
                let at = phases.iter().position(|&p| p == phase).unwrap_or_else(|| {
                    phases.push(phase);
                    phases.len() - 1
                });
                inner.push((at, (r / strides[0]) * pitch + c / strides[1]));
            }
        }
        // Every position, offset and plane below is at most twice the padded area plus a
        // block: an area past a quarter of the address space is refused, not wrapped.
        rows.checked_mul(pitch)
            .filter(|&area| area <= usize::MAX / 4)
            .ok_or_else(too_large)?;
        let needed = (out_h * pitch).div_ceil(LANES);
        let padded = |v: usize| needed.div_ceil(v) * v;
        // Three vectors a block unless fewer leave clearly less of the last block empty
        // (a 7x7 output of pitch 9 needs 4 vectors: 6 in blocks of 3, 4 in blocks of 2).
        let vectors = (1..MAX_VECTORS)
            .rev()
            .find(|&v| padded(v) * 100 < padded(MAX_VECTORS) * 85)
            .unwrap_or(MAX_VECTORS);
        let positions = padded(vectors) * LANES;
        let reach = inner.iter().map(|&(_, off)| off).max().unwrap_or(0);
        let plane = (rows * pitch).max(positions + reach);
        let group_stride = plane.checked_mul(phases.len()).ok_or_else(too_large)?;
        group_stride
            .checked_mul(channels.div_ceil(4))
            .ok_or_else(too_large)?;
        Ok(Geometry {
            out_h,
            out_w,
            pitch,
            vectors,
            positions,
            groups: channels.div_ceil(4),
            group_stride,
            taps: inner.iter().map(|&(ph, off)| ph * plane + off).collect(),
            in_h: input[0],
            in_w: input[1],
            pad_top,
            pad_left,
            strides,
            dilations,
            kernel,
            phases,
            plane,
        })
    }

    /// Phase planes a quantizing task writes together: the run of consecutive planes that
    /// share the first plane's row phase, where the planes fall into such runs of one length
    /// with a different row phase each (every kernel's do: its phases are found row-major);
    /// else all of a group's planes. A task then packs each input row it reads once.
    pub fn planes_per_task(&self) -> usize {
        let all = self.phases.len();
        let Some(first) = self.phases.first() else {
            return 1;
        };
        let run = self.phases.iter().take_while(|p| p[0] == first[0]).count();
        let runs = || self.phases.chunks(run);
        let grouped = all.is_multiple_of(run)
            && runs().enumerate().all(|(i, r)| {
                r.iter().all(|p| p[0] == r[0][0]) && runs().take(i).all(|q| q[0][0] != r[0][0])
            });
        if grouped {
            run
        } else {
            all
        }
    }

    /// Positions per block.
    pub fn span(&self) -> usize {
        self.vectors * LANES
    }

    /// The outputs among computed positions `p..p + len`, as runs of consecutive outputs:
    /// `f(i, at, n)` for the positions `p + i..p + i + n`, which are the outputs `at..at + n`
    /// of a plane.
    pub fn for_each_run(&self, p: usize, len: usize, mut f: impl FnMut(usize, usize, usize)) {
        let mut i = 0;
        while i < len {
            let (oh, ow) = ((p + i) / self.pitch, (p + i) % self.pitch);
            if oh >= self.out_h {
                break;
            }
            let run = (self.pitch - ow).min(len - i);
            if ow < self.out_w {
                f(i, oh * self.out_w + ow, (self.out_w - ow).min(run));
            }
            i += run;
        }
    }
}

/// An image's quantized words, and whether any input was NaN.
pub(super) struct Quantized {
    pub words: Vec<u32>,
    pub nan: bool,
}

/// Quantizes one image `[C, H, W]` into the words `g` lays out: every word first the zero
/// level's (the padding, and the channels past `C` of the last group, whose weights are 0),
/// then each input position's 4 levels in the planes of the phases that read it. `src` is
/// f32 values (each level computed by `levels`) or the levels themselves.
pub(super) fn quantize<T: Rows>(
    src: &[T],
    channels: usize,
    g: &Geometry,
    levels: &ActivationLevels,
    zero: u8,
    vectorised: bool,
) -> Result<Quantized, OpError> {
    let total = g.groups * g.group_stride;
    let nan = AtomicBool::new(false);
    // The unit of work: a group's phase planes of one row phase, so that a stride-2 layer
    // with one group (a stem of 3 channels) is two tasks, not one, and each input row is
    // still packed once.
    let per_unit = g.planes_per_task();
    let units_per_group = (g.phases.len() / per_unit).max(1);
    let unit = (per_unit * g.plane).max(1);
    // Each task fills its own planes with the zero level and then writes their rows: a
    // fill of the whole vector by the calling thread first was a twelfth of a 3x3 layer's
    // time at two threads (the other thread's task had written those lines last).
    let image = Image {
        src,
        channels,
        levels,
        zero,
        vectorised,
    };
    let words = irun_opkit::par::build(total, unit, &|start, filler| {
        let chunk = filler.repeat_mut(u32::from_ne_bytes([zero; 4]), filler.remaining());
        for (i, unit_words) in chunk.chunks_mut(unit).enumerate() {
            let u = start / unit + i;
            let first = (u % units_per_group) * per_unit;
            let planes = first..first + per_unit;
            if image.quantize_group(u / units_per_group, g, planes, unit_words) {
                nan.store(true, Ordering::Relaxed);
            }
        }
    })?;
    Ok(Quantized {
        words,
        nan: nan.into_inner(),
    })
}

/// What an image's rows hold: f32 values or their levels already.
pub(super) trait Rows: Copy + Sync {
    /// Each position's word of the `N` channel rows' levels (the channels past `N` at the
    /// zero level); whether any value was NaN.
    fn pack<const N: usize>(image: &Image<Self>, rows: [&[Self]; N], dst: &mut [u32]) -> bool;
}

impl Rows for f32 {
    fn pack<const N: usize>(image: &Image<f32>, rows: [&[f32]; N], dst: &mut [u32]) -> bool {
        pack_words(image.levels, rows, image.zero, dst, image.vectorised)
    }
}

impl Rows for u8 {
    fn pack<const N: usize>(image: &Image<u8>, rows: [&[u8]; N], dst: &mut [u32]) -> bool {
        let rows = rows.map(|r| &r[..dst.len()]);
        if let Ok(&[a, b, c, d]) = <&[&[u8]; 4]>::try_from(&rows[..]) {
            simd::widest(
                #[inline(always)]
                || {
                    for ((((w, &a), &b), &c), &d) in dst.iter_mut().zip(a).zip(b).zip(c).zip(d) {
                        *w = u32::from_le_bytes([a, b, c, d]);
                    }
                },
            );
            return false;
        }
        // The last group of a channel count that is not a multiple of 4, a row at a time.
        dst.fill(zero_past::<N>(image.zero));
        for (c, row) in rows.iter().enumerate() {
            for (w, &k) in dst.iter_mut().zip(*row) {
                *w |= u32::from(k) << (8 * c);
            }
        }
        false
    }
}

/// A word's bytes of the channels past the first `N`: the zero level each.
fn zero_past<const N: usize>(zero: u8) -> u32 {
    (N..4).fold(0u32, |w, c| w | u32::from(zero) << (8 * c))
}

/// One image `[C, H, W]` to quantize, and how.
pub(super) struct Image<'a, T> {
    src: &'a [T],
    channels: usize,
    levels: &'a ActivationLevels,
    zero: u8,
    vectorised: bool,
}

impl<T: Rows> Image<'_, T> {
    /// Writes channel group `group`'s rows into its phase planes `planes`, whose words
    /// `words` holds (already at the zero level); whether any of the inputs it read was NaN.
    fn quantize_group(
        &self,
        group: usize,
        g: &Geometry,
        planes: Range<usize>,
        words: &mut [u32],
    ) -> bool {
        let phases = &g.phases[planes.clone()];
        let (src, channels) = (self.src, self.channels);
        let present = channels.saturating_sub(group * 4).min(4);
        let (h, w) = (g.in_h, g.in_w);
        let sw = g.strides[1];
        // A row's words before the column phases take them apart (strided layers only).
        let mut packed = vec![0u32; if sw == 1 { 0 } else { w }];
        let mut any_nan = false;
        for y in 0..h {
            let r = y + g.pad_top;
            let (row_phase, row_q) = (r % g.strides[0], r / g.strides[0]);
            if !phases.iter().any(|p| p[0] == row_phase) {
                continue;
            }
            let row = |k: usize| &src[((group * 4 + k) * h + y) * w..][..w];
            let mut words_of = |dst: &mut [u32]| {
                any_nan |= match present {
                    1 => T::pack(self, [row(0)], dst),
                    2 => T::pack(self, [row(0), row(1)], dst),
                    3 => T::pack(self, [row(0), row(1), row(2)], dst),
                    _ => T::pack(self, [row(0), row(1), row(2), row(3)], dst),
                }
            };
            if sw != 1 {
                words_of(&mut packed);
            }
            for (ph, phase) in phases.iter().enumerate() {
                if phase[0] != row_phase {
                    continue;
                }
                let base = ph * g.plane + row_q * g.pitch;
                if sw == 1 {
                    words_of(&mut words[base + g.pad_left..][..w]);
                    continue;
                }
                // Columns x with (x + pad_left) % sw == phase[1].
                let first = (phase[1] + sw - g.pad_left % sw) % sw;
                let dst = &mut words[base + (first + g.pad_left) / sw..];
                every_nth_word(&packed[first..], sw, dst);
            }
        }
        any_nan
    }
}

/// Words `0, n, 2n, ..` of `src` into `dst`, as many as both hold. For `n` 2 (the stride-2
/// layers) each pair is read as one little-endian u64 and its low word kept: that vectorises
/// (a truncating move), where picking words one by one did not, and was two thirds of a
/// stride-2 layer's quantizing.
pub(super) fn every_nth_word(src: &[u32], n: usize, dst: &mut [u32]) {
    if n != 2 {
        for (d, &word) in dst.iter_mut().zip(src.iter().step_by(n)) {
            *d = word;
        }
        return;
    }
    let pairs = dst.len().min(src.len() / 2);
    let bytes: &[u8] = bytemuck::cast_slice(&src[..2 * pairs]);
    for (d, pair) in dst.iter_mut().zip(bytes.chunks_exact(8)) {
        let pair = u64::from_ne_bytes(pair.try_into().expect("chunks of 8"));
        // The pair's first word: the low half on a little-endian machine.
        *d = if cfg!(target_endian = "little") {
            pair as u32
        } else {
            (pair >> 32) as u32
        };
    }
    // An odd `src` leaves its last word unpaired.
    if let (Some(d), Some(&word)) = (dst.get_mut(pairs), src.get(2 * pairs)) {
        *d = word;
    }
}

/// Each position's word of the `N` channel rows' levels (the channels past `N` at the zero
/// level; NaN at level 0, reported by the return value).
pub(super) fn pack_words<const N: usize>(
    levels: &ActivationLevels,
    rows: [&[f32]; N],
    zero: u8,
    dst: &mut [u32],
    vectorised: bool,
) -> bool {
    let rest = zero_past::<N>(zero);
    let rows = rows.map(|r| &r[..dst.len()]);
    #[cfg(target_arch = "x86_64")]
    if vectorised && simd::unit() == simd::Unit::Avx512 {
        // SAFETY: AVX-512 F is present (`unit()` found it); every row holds `dst.len()`
        // values (sliced above).
        return unsafe { super::avx512::pack_words(levels, rows, rest, dst) };
    }
    let _ = vectorised;
    pack_words_scalar(levels, rows, rest, dst)
}

/// [`pack_words`] one position at a time, with `rest` the bytes of the channels past `N`.
pub(super) fn pack_words_scalar<const N: usize>(
    levels: &ActivationLevels,
    rows: [&[f32]; N],
    rest: u32,
    dst: &mut [u32],
) -> bool {
    let mut nan = false;
    for (x, d) in dst.iter_mut().enumerate() {
        let mut word = rest;
        for (c, row) in rows.iter().enumerate() {
            let v = row[x];
            nan |= v.is_nan();
            word |= (levels.level(v) as i32 as u32) << (8 * c);
        }
        *d = word;
    }
    nan
}

/// Sets to NaN every output whose window reads a NaN input (in f32 each such sum is NaN,
/// whatever the weights; the levels put those inputs at level 0).
pub(super) fn spread_nan(src: &[f32], channels: usize, g: &Geometry, dst: &mut [f32]) {
    let (h, w) = (g.in_h, g.in_w);
    let mut marked = vec![false; h * w];
    for c in 0..channels {
        for (m, x) in marked.iter_mut().zip(&src[c * h * w..(c + 1) * h * w]) {
            *m |= x.is_nan();
        }
    }
    let plane = g.out_h * g.out_w;
    for oh in 0..g.out_h {
        for ow in 0..g.out_w {
            let reads_nan = (0..g.kernel[0]).any(|i| {
                (0..g.kernel[1]).any(|j| {
                    let y = (oh * g.strides[0] + i * g.dilations[0]).checked_sub(g.pad_top);
                    let x = (ow * g.strides[1] + j * g.dilations[1]).checked_sub(g.pad_left);
                    matches!((y, x), (Some(y), Some(x)) if y < h && x < w && marked[y * w + x])
                })
            });
            if reads_nan {
                for o in dst.chunks_exact_mut(plane.max(1)) {
                    o[oh * g.out_w + ow] = f32::NAN;
                }
            }
        }
    }
}

/// The exact integer sum of one output: over every tap and channel group, the 4 products of
/// the word at flat position `at` and the weight word of the output's `lane` in a block of
/// `width` channels (`weights` that block's `[tap][group][width]` words). One product at a
/// time: what the vector kernels compute.
pub(super) fn window_sum(
    words: &[u32],
    at: usize,
    g: &Geometry,
    weights: &[i32],
    width: usize,
    lane: usize,
) -> i32 {
    let mut acc = 0i32;
    for (t, &tap) in g.taps.iter().enumerate() {
        for grp in 0..g.groups {
            let (levels, codes) = (
                words[grp * g.group_stride + tap + at].to_le_bytes(),
                weights[(t * g.groups + grp) * width + lane].to_le_bytes(),
            );
            for b in 0..4 {
                acc = acc.wrapping_add(i32::from(levels[b]) * i32::from(codes[b] as i8));
            }
        }
    }
    acc
}

/// What turns a block's integer sums into outputs, per output channel of a block of `N`:
/// `(sum - zero_sum) as f32 * scale` (0 and 0.0 for channels past the last).
pub(super) struct Scales<const N: usize> {
    pub zero_sums: [i32; N],
    pub scales: [f32; N],
}

/// [`Scales`] of the position blocks' 8 channels.
pub(super) type BlockScales = Scales<CO_BLOCK>;

impl<const N: usize> Scales<N> {
    /// The output of channel `lane` whose integer sum is `sum`.
    #[inline(always)]
    pub fn output(&self, lane: usize, sum: i32) -> f32 {
        sum.wrapping_sub(self.zero_sums[lane]) as f32 * self.scales[lane]
    }

    /// Those of output channels `first..first + N` of `zero_sums` and `scales`.
    pub fn of(zero_sums: &[i32], scales: &[f32], first: usize) -> Scales<N> {
        Scales {
            zero_sums: std::array::from_fn(|i| zero_sums.get(first + i).copied().unwrap_or(0)),
            scales: std::array::from_fn(|i| scales.get(first + i).copied().unwrap_or(0.0)),
        }
    }
}

/// A block's outputs, one product at a time: `out[lane][i]` for output channel `lane` of the
/// block and position `p + i`, the exact integer sum converted as [`BlockScales`] says. What
/// the vector kernel computes.
pub(super) fn block_scalar(
    words: &[u32],
    p: usize,
    g: &Geometry,
    weights: &[i32],
    scales: &BlockScales,
    out: &mut [[f32; MAX_SPAN]; CO_BLOCK],
) {
    for (lane, row) in out.iter_mut().enumerate() {
        for (i, y) in row[..g.span()].iter_mut().enumerate() {
            *y = scales.output(lane, window_sum(words, p + i, g, weights, CO_BLOCK, lane));
        }
    }
}
