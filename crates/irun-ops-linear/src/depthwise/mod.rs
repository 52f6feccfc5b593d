//! The depthwise convolution (one input and one output channel per group, f32): each output
//! plane is a weighted sum of shifted copies of its input plane.
//!
//! With AVX-512 or AVX2, every 2-D layer with finite weights takes one of two walks that give
//! the same bits (each output adds every tap, padding included, by fused multiply-adds in
//! order):
//! - on AVX-512, the channel-block walk (`blocks.rs`) where there are two blocks of 16
//!   channels per thread: sixteen channels in the lanes, the input moved to a padded
//!   channel-last block by register transposes, row tiles of up to 14 outputs in registers;
//! - else the phase walk (`phases.rs`, AVX-512 or AVX2): the input plane padded and split
//!   into its stride's phases, tiles of up to eight vectors of flat outputs in registers.
//!
//! MobileNetV3's eleven depthwise layers, 2 threads: 0.87 ms by the walks below, 0.50 ms by
//! phases, 0.45 ms with the channel blocks where they apply (AVX-512 host); on an AVX2 host
//! (Zen 3), 1.8-2.0 ms by the walks below, 1.3 ms by phases. Elsewhere, three walks:
//! - wide planes at stride 1 go a plane at a time: the input copied into a zero-padded plane
//!   so that each tap is one long run over it (finite weights, 2-D);
//! - other wide planes go a row at a time: each tap adds a scaled run of an input row to an
//!   output row, which vectorises along the row (strided rows split into phases first);
//! - narrow planes (MobileNet's 7x7 and 14x14, where a row loop has nothing to vectorise and
//!   ran at 2 GMAC/s) go in blocks of `LANES` channels transposed to channel-last, so each
//!   tap is one multiply-add of `LANES` channels at once.
//!
//! Every walk has each output element add its in-bounds taps in tap order starting from 0,
//! as the direct definition does (padding taps add ±0, which changes no sum); the phase walk
//! by fused multiply-adds (one rounding per tap), the others by a multiply and an add. Each
//! is bit-identical to its definition, and none depends on the thread count (a plane or a
//! block is one task). Plane walks write the output once, into its capacity.

use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::op::OpError;
use crate::par::{self, Filler};
use crate::simd;
use irun_opkit::epilogue::{Channels, Epilogue};
use irun_opkit::quantize::FakeQuantizeRange;

/// Channels per block: one AVX-512 register, four SSE ones.
const LANES: usize = 16;

/// Output rows at least this wide go a row at a time (measured on MobileNetV3's layers: the
/// channel blocks win at widths 7 and 14, the rows at 28 and up, where the block's transposed
/// plane leaves L2).
const ROW_WALK_WIDTH: usize = 24;

type Lanes = [f32; LANES];

/// Geometry of a depthwise convolution, spatial dims padded to 3.
pub struct Depthwise {
    pub n: usize,
    pub channels: usize,
    pub input: [usize; 3],
    pub kernel: [usize; 3],
    pub out: [usize; 3],
    pub stride: [usize; 3],
    pub dil: [usize; 3],
    pub pad: [usize; 3],
}

impl Depthwise {
    /// The input coordinate of tap `t` of output `o` along dim `d`, if inside.
    pub(crate) fn coord(&self, d: usize, o: usize, t: usize) -> Option<usize> {
        (o * self.stride[d] + t * self.dil[d])
            .checked_sub(self.pad[d])
            .filter(|&c| c < self.input[d])
    }

    /// Per dim, `table[o * kernel + t]`: the input coordinate tap `t` of output `o` meets.
    fn table(&self, d: usize) -> Vec<Option<usize>> {
        let k = self.kernel[d];
        (0..self.out[d] * k)
            .map(|i| self.coord(d, i / k, i % k))
            .collect()
    }

    /// `x [N, C, *input]` with `w [C, *kernel]` into `[N, C, *out]`.
    pub fn run(&self, x: &[f32], w: &[f32]) -> Result<Vec<f32>, OpError> {
        self.run_finished(x, w, None, &[])
    }

    /// [`Self::run`], then `epilogue` (a bias by channel, an activation) and the
    /// FakeQuantize `quantize` (one range, or one per channel; none if empty) on the output:
    /// by the channel-block walk on each block as it is written, still in cache, else over
    /// the whole output after (MobileNetV3's depthwise layers spent 4.8% of the model in the
    /// epilogue's pass, reading and writing their outputs once more).
    pub fn run_finished(
        &self,
        x: &[f32],
        w: &[f32],
        epilogue: Option<&Epilogue>,
        quantize: &[FakeQuantizeRange],
    ) -> Result<Vec<f32>, OpError> {
        // Without the vector walks, plane runs measured on MobileNetV3 (2 threads): 28-wide
        // 0.145 ms by rows, 0.067 ms by plane runs; 7-wide 0.069 ms by channel blocks, 0.12
        // ms by plane runs.
        let mut out = if self.kernel.contains(&0) || self.input.contains(&0) {
            // No taps (spatial.rs sizes the output as for a kernel of 1), or none inside an
            // empty input (padding can still give it outputs): every output is an empty sum.
            // The walks below step through kernel and input rows and assume neither is empty.
            let plane_out: usize = self.out.iter().product();
            try_zeroed::<f32>(self.n * self.channels * plane_out)?
        } else if self.suits_phases(w) && self.suits_blocks() {
            return self.by_blocks(x, w, epilogue, quantize);
        } else if self.suits_phases(w) {
            self.by_phases(x, w)?
        } else if self.out[2] >= ROW_WALK_WIDTH && self.suits_plane_runs(w) {
            self.by_plane_runs(x, w)?
        } else if self.out[2] >= ROW_WALK_WIDTH {
            self.by_rows(x, w)?
        } else {
            self.by_channel_blocks(x, w)?
        };
        if let Some(e) = epilogue {
            e.apply(&mut out, self.planes());
        }
        let plane: usize = self.out.iter().product();
        FakeQuantizeRange::apply_to_planes(quantize, &mut out, 0, plane);
        Ok(out)
    }

    /// How the output's elements map to channels, for an epilogue.
    fn planes(&self) -> Channels {
        Channels::Planes {
            channels: self.channels,
            plane: self.out.iter().product(),
        }
    }

    /// Whether [`Self::by_plane_runs`] applies: two spatial dims at most, stride 1, finite
    /// weights (a padding tap adds `w * 0`, which is `±0` and leaves a sum unchanged only for
    /// a finite `w`).
    fn suits_plane_runs(&self, w: &[f32]) -> bool {
        self.is_2d() && self.stride == [1, 1, 1] && all_finite(w)
    }

    /// Whether [`Self::by_phases`] applies: AVX-512 or AVX2, two spatial dims at most, finite
    /// weights (a padding tap adds `w * 0`, `±0` only for a finite `w`).
    fn suits_phases(&self, w: &[f32]) -> bool {
        phases::supported() && self.is_2d() && all_finite(w)
    }

    /// Whether the channel-block walk has two blocks of 16 channels for each thread at
    /// least (the walks give the same bits, so this is a choice of speed only): it is the
    /// faster on every MobileNet shape measured alone, but its tasks are whole blocks,
    /// so a layer of 16 channels ran on one thread (0.081 ms, 0.055 by phases).
    fn has_blocks_for_every_thread(&self) -> bool {
        self.n * self.channels.div_ceil(16) >= 2 * par::threads()
    }

    /// Whether the channel-block walk is the faster of the two (the phase walk applies): on
    /// AVX-512 wherever every thread has two blocks; on AVX2 only where a row of outputs is
    /// one tile, as wider rows pay more for the transposes in and out of the lanes than the
    /// phase walk for its padding (2 threads, MobileNetV3's layers alone, medians of 5:
    /// 576 channels on 7x7 0.057 ms against 0.092 by phases, 240 on 14x14 0.075 against
    /// 0.090; 88 on 28x28 0.14-0.24 against 0.08-0.10).
    fn suits_blocks(&self) -> bool {
        let rows_fit = crate::avx512f() || self.out[2] <= blocks::MAX_TILE;
        blocks::supported() && rows_fit && self.has_blocks_for_every_thread()
    }

    /// At most two spatial dims, and a non-empty input.
    fn is_2d(&self) -> bool {
        self.input[0] == 1 && self.kernel[0] == 1 && self.out[0] == 1 && !self.input.contains(&0)
    }

    /// Stride 1: each input plane copied once into a zero-padded plane as wide as the
    /// windows of a whole output row need, so that one tap of every output of the plane is
    /// one contiguous run of it, offset by the tap; the outputs are computed on that width
    /// and the columns past the output's are dropped. One long vectorised loop per tap rather
    /// than one short loop per tap and row (MobileNet's 28-wide rows spent most of their time
    /// in loop overhead). Padding taps add `w * 0 = ±0`, which leaves every sum as the direct
    /// definition has it, given finite weights.
    pub fn by_plane_runs(&self, x: &[f32], w: &[f32]) -> Result<Vec<f32>, OpError> {
        let [_, ih, iw] = self.input;
        let [_, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let [_, dy, dx] = self.dil;
        let [_, pt, pl] = self.pad;
        // Padded width: the input row after its left padding, and every tap of every output
        // of a row without wrapping into the next.
        let width = (iw + pl).max(ow + (kw - 1) * dx);
        let rows = (ih + pt).max(oh + (kh - 1) * dy);
        // Runs of the last output row read up to `(kw - 1) * dx` past the last padded row.
        let padded_len = rows * width + (kw - 1) * dx;
        let wide_len = oh * width;
        self.for_each_plane(
            x,
            w,
            &|| (vec![0f32; padded_len], vec![0f32; wide_len]),
            #[inline(always)]
            |xc, wc, out, (padded, wide)| {
                // Only the input's cells are rewritten; the padding stays 0.
                for (r, src) in xc.chunks_exact(iw).enumerate() {
                    padded[(r + pt) * width + pl..][..iw].copy_from_slice(src);
                }
                wide.fill(0.0);
                for (t, &wt) in wc.iter().enumerate() {
                    let offset = (t / kw) * dy * width + (t % kw) * dx;
                    for (o, &v) in wide.iter_mut().zip(&padded[offset..]) {
                        *o += wt * v;
                    }
                }
                for row in wide.chunks_exact(width) {
                    out.extend_from_slice(&row[..ow]);
                }
            },
        )
    }

    /// Output planes in parallel, whole planes per task and at least `PAR_MIN_ELEMENTS`
    /// multiply-adds of them: `plane(input plane, its weights, out, scratch)` for each, which
    /// appends the output plane to `out`, compiled for the widest vector unit
    /// ([`simd::widest`]), with `scratch` made once per task. The output is written once, into
    /// its capacity ([`par::build`]): no zero fill first. The plane walks share it; `plane`
    /// should be `#[inline(always)]`.
    fn for_each_plane<S>(
        &self,
        x: &[f32],
        w: &[f32],
        scratch: &(dyn Fn() -> S + Sync),
        plane: impl Fn(&[f32], &[f32], &mut Filler<f32>, &mut S) + Sync,
    ) -> Result<Vec<f32>, OpError> {
        let plane_in: usize = self.input.iter().product();
        let plane_out: usize = self.out.iter().product();
        let taps: usize = self.kernel.iter().product();
        let len = self.n * self.channels * plane_out;
        if len == 0 {
            return Ok(Vec::new());
        }
        let grain = (PAR_MIN_ELEMENTS / (plane_out * taps).max(1)).max(1) * plane_out;
        par::build(len, grain, &|start, out| {
            let mut s = scratch();
            for k in 0..out.remaining() / plane_out {
                let p = start / plane_out + k;
                let xc = &x[p * plane_in..][..plane_in];
                let wc = &w[(p % self.channels) * taps..][..taps];
                simd::widest(
                    #[inline(always)]
                    || plane(xc, wc, out, &mut s),
                );
            }
        })
    }

    /// Planes in parallel, whole planes per task and at least `PAR_MIN_ELEMENTS`
    /// multiply-adds of them; within a plane, per output row and tap a run of the input row.
    pub fn by_rows(&self, x: &[f32], w: &[f32]) -> Result<Vec<f32>, OpError> {
        let [id, ih, iw] = self.input;
        let [kd, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let (zs, ys) = (self.table(0), self.table(1));
        // Per column tap: the outputs `lo..hi` whose input column is inside, and the input
        // column of output `lo`.
        let xs: Vec<(usize, usize, usize)> = (0..kw)
            .map(|e| {
                let inside = |o: usize| self.coord(2, o, e).map(|c| (o, c));
                match (0..ow).find_map(inside) {
                    Some((lo, from)) => {
                        let hi = (0..ow).rev().find_map(inside).map_or(lo, |l| l.0) + 1;
                        (lo, hi, from)
                    }
                    None => (0, 0, 0),
                }
            })
            .collect();
        // Strided rows are first split into `sx` phases (columns `ph, ph + sx, ...`), so that
        // every tap reads a contiguous run, which vectorises.
        let sx = self.stride[2];
        let phase_width = iw.div_ceil(sx);
        let phases_len = if sx > 1 {
            id * ih * sx * phase_width
        } else {
            0
        };
        self.for_each_plane(
            x,
            w,
            &|| (vec![0f32; phases_len], vec![0f32; oh * ow * self.out[0]]),
            #[inline(always)]
            |xc, wc, out, (phases, dst)| {
                dst.fill(0.0);
                if sx > 1 {
                    for (r, src) in xc.chunks_exact(iw).enumerate() {
                        let dst = &mut phases[r * sx * phase_width..][..sx * phase_width];
                        deinterleave(src, sx, dst);
                    }
                }
                for (z, zrow) in zs.chunks(kd).enumerate() {
                    for (y, yrow) in ys.chunks(kh).enumerate() {
                        let row = &mut dst[(z * oh + y) * ow..][..ow];
                        for (a, iz) in zrow.iter().enumerate() {
                            let Some(iz) = iz else { continue };
                            for (b, iy) in yrow.iter().enumerate() {
                                let Some(iy) = iy else { continue };
                                let wrow = &wc[(a * kh + b) * kw..][..kw];
                                let src = &xc[(iz * ih + iy) * iw..][..iw];
                                for (&wt, &(lo, hi, from)) in wrow.iter().zip(&xs) {
                                    let run = if sx == 1 {
                                        &src[from..][..hi - lo]
                                    } else {
                                        let ph = &phases
                                            [((iz * ih + iy) * sx + from % sx) * phase_width..]
                                            [..phase_width];
                                        &ph[from / sx..][..hi - lo]
                                    };
                                    for (d, &v) in row[lo..hi].iter_mut().zip(run) {
                                        *d += wt * v;
                                    }
                                }
                            }
                        }
                    }
                }
                out.extend_from_slice(dst);
            },
        )
    }

    /// Blocks of `LANES` channels in parallel, one task each, transposed to channel-last.
    pub fn by_channel_blocks(&self, x: &[f32], w: &[f32]) -> Result<Vec<f32>, OpError> {
        let plane_in: usize = self.input.iter().product();
        let plane_out: usize = self.out.iter().product();
        let taps: usize = self.kernel.iter().product();
        let mut out = try_zeroed::<f32>(self.n * self.channels * plane_out)?;
        if plane_out == 0 || self.channels == 0 {
            return Ok(out);
        }
        let tables = [self.table(0), self.table(1), self.table(2)];
        let [_, ih, iw] = self.input;
        let [kd, kh, kw] = self.kernel;
        for (n, item) in out.chunks_mut(self.channels * plane_out).enumerate() {
            let xn = &x[n * self.channels * plane_in..][..self.channels * plane_in];
            par::for_each_chunk_mut(item, LANES * plane_out, &|start, dst| {
                let c0 = start / plane_out;
                let lanes = dst.len() / plane_out;
                // Channel-last input and weights of the block; lanes past the last channel
                // stay 0 and are never written out.
                let mut xb = vec![[0f32; LANES]; plane_in];
                let mut wb = vec![[0f32; LANES]; taps];
                for l in 0..lanes {
                    let plane = &xn[(c0 + l) * plane_in..][..plane_in];
                    for (v, &s) in xb.iter_mut().zip(plane) {
                        v[l] = s;
                    }
                    for (v, &s) in wb.iter_mut().zip(&w[(c0 + l) * taps..][..taps]) {
                        v[l] = s;
                    }
                }
                simd::widest(
                    #[inline(always)]
                    || {
                        let mut o = 0;
                        for zt in tables[0].chunks(kd) {
                            for yt in tables[1].chunks(kh) {
                                for xt in tables[2].chunks(kw) {
                                    let acc = self.output(&xb, &wb, [zt, yt, xt], [ih, iw]);
                                    for (l, &a) in acc.iter().enumerate().take(lanes) {
                                        dst[l * plane_out + o] = a;
                                    }
                                    o += 1;
                                }
                            }
                        }
                    },
                );
            });
        }
        Ok(out)
    }

    /// One output position of the block: its in-bounds taps (given per dim as input
    /// coordinates) in tap order.
    #[inline(always)]
    fn output(
        &self,
        xb: &[Lanes],
        wb: &[Lanes],
        [zt, yt, xt]: [&[Option<usize>]; 3],
        [ih, iw]: [usize; 2],
    ) -> Lanes {
        let mut acc = [0f32; LANES];
        let (kh, kw) = (yt.len(), xt.len());
        for (a, iz) in zt.iter().enumerate() {
            let Some(iz) = iz else { continue };
            for (b, iy) in yt.iter().enumerate() {
                let Some(iy) = iy else { continue };
                let row = (iz * ih + iy) * iw;
                let wrow = &wb[(a * kh + b) * kw..][..kw];
                for (wv, ix) in wrow.iter().zip(xt) {
                    let Some(ix) = ix else { continue };
                    let xv = &xb[row + ix];
                    for l in 0..LANES {
                        acc[l] += wv[l] * xv[l];
                    }
                }
            }
        }
        acc
    }
}

/// Whether every weight is finite: one pass without an early exit, which vectorises (the
/// check runs every inference, over every weight of the layer).
fn all_finite(w: &[f32]) -> bool {
    w.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// `src` split into `sx` phases of `dst.len() / sx` each: phase `ph` holds `src[ph]`,
/// `src[ph + sx]`, ... (its unused tail is left as it was).
#[inline(always)]
fn deinterleave(src: &[f32], sx: usize, dst: &mut [f32]) {
    let width = dst.len() / sx;
    if sx == 2 {
        // Stride 2, nearly every strided depthwise layer: pairs, which vectorise.
        let (even, odd) = dst.split_at_mut(width);
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(src.chunks_exact(2)) {
            *e = pair[0];
            *o = pair[1];
        }
        if src.len() % 2 == 1 {
            even[src.len() / 2] = src[src.len() - 1];
        }
        return;
    }
    for (j, group) in src.chunks(sx).enumerate() {
        for (ph, &v) in group.iter().enumerate() {
            dst[ph * width + j] = v;
        }
    }
}

mod blocks;
pub(crate) mod phases;
#[cfg(test)]
mod tests;
