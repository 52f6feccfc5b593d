//! The channel-block walk of the depthwise convolution (AVX-512, or AVX2 and FMA): sixteen
//! channels of one item in the lanes of a vector (two on AVX2). Each band of input rows is
//! moved into a zero-padded channel-last block by register transposes, so that one tap of
//! one output is one vector multiply-add of its sixteen channels (two on AVX2); row tiles
//! of up to [`MAX_TILE`] outputs keep their sums in registers across the taps, and the sums
//! go back to the planes by transposes.
//!
//! Why, beside the phase walk: that one puts flat positions in the lanes, one plane at a
//! time. On MobileNetV3's small planes it computes the padding columns too (a 7x7 output
//! under a 5x5 kernel fills 80 lanes for 49 outputs, five FMA chains), loads every tap
//! across two cache lines, and pads, packs and copies each plane on its own: 0.050 ms for
//! 576 channels of 7x7 against OpenVINO's 0.015 ms in its channel-blocked layout.
//!
//! Same sums as the phase walk: each output adds every tap, padding included (`w * 0`, ±0
//! for finite weights), in tap order by fused multiply-adds from 0, so the same bits (the
//! tests compare the walks).

use super::Depthwise;
use crate::op::OpError;
use crate::{par, simd};
use irun_opkit::epilogue::Epilogue;
use irun_opkit::quantize::FakeQuantizeRange;
use irun_opkit::transpose16::{from_lanes, to_lanes};

/// Channels of a block: the lanes of one vector.
const LANES: usize = 16;
/// Outputs of a row tile, at most: one accumulator each, with the tap's weights and an input
/// vector 16 of the 32 registers (on AVX2, per half of the lanes, 15 of the 16, the input
/// read by the multiply-add itself); 14 covers a 14- or 28-wide row in whole tiles.
pub(super) const MAX_TILE: usize = 14;
/// Bytes of channel-last input a band holds, at most (with its sums, well inside L2).
const BAND_BYTES: usize = 96 << 10;

/// Where a channel-block walk reads and writes.
struct BlockLayout {
    /// Columns of the padded input the outputs read (`(ow - 1) * sx + (kw - 1) * dx + 1`).
    width: usize,
    /// Output rows per band; padded input rows one output row reads (`(kh - 1) * dy + 1`),
    /// and a whole band.
    band: usize,
    span: usize,
    band_rows: usize,
    /// Each tap's offset in a band from its output's first cell, in values
    /// (`16 * (ky * dy * width + kx * dx)`), and the greatest.
    taps: Vec<usize>,
    reach: usize,
    /// Row tiles: first output column and columns.
    tiles: Vec<(usize, usize)>,
}

/// Whether this CPU runs the walk: AVX-512F, or AVX2 and FMA.
pub(super) fn supported() -> bool {
    crate::avx512f() || simd::unit() == simd::Unit::Avx2
}

impl Depthwise {
    /// Blocks of sixteen channels of an item in parallel, one task each at least; within a
    /// block, bands of output rows whose padded input stays in cache; `epilogue` applied to
    /// each block once written, while it is in cache.
    pub fn by_blocks(
        &self,
        x: &[f32],
        w: &[f32],
        epilogue: Option<&Epilogue>,
        quantize: &[FakeQuantizeRange],
    ) -> Result<Vec<f32>, OpError> {
        let plane_in: usize = self.input.iter().product();
        let plane_out: usize = self.out.iter().product();
        let taps: usize = self.kernel.iter().product();
        let len = self.n * self.channels * plane_out;
        if len == 0 {
            return Ok(Vec::new());
        }
        let l = self.block_layout();
        par::build(len, LANES * plane_out, &|start, fill| {
            let mut padded = Aligned::new(l.band_rows * l.width * LANES);
            let mut sums = Aligned::new(l.band * self.out[2] * LANES);
            let mut weights = Aligned::new(taps * LANES);
            let (padded, sums, weights) = (padded.get(), sums.get(), weights.get());
            // Planes `p ..` of the output, item-major: a block never crosses an item.
            let mut p = start / plane_out;
            while fill.remaining() > 0 {
                let c = p % self.channels;
                let lanes = LANES
                    .min(self.channels - c)
                    .min(fill.remaining() / plane_out);
                let ws = &w[c * taps..][..lanes * taps];
                for t0 in (0..taps).step_by(LANES) {
                    let cols = LANES.min(taps - t0);
                    to_lanes(&ws[t0..], taps, lanes, cols, &mut weights[t0 * LANES..]);
                }
                let xs = &x[p * plane_in..][..lanes * plane_in];
                // Compiled for AVX-512, so that the zeros go in 64-byte stores.
                simd::widest(
                    #[inline(always)]
                    || {
                        let dst = fill.repeat_mut(0.0, lanes * plane_out);
                        self.block(xs, lanes, weights, &l, (padded, sums), dst);
                        if let Some(e) = epilogue {
                            e.apply_at(dst, p * plane_out, self.planes());
                        }
                        FakeQuantizeRange::apply_to_planes(quantize, dst, p, plane_out);
                    },
                );
                p += lanes;
            }
        })
    }

    /// The walk's layout for this geometry (two spatial dims, a non-empty output).
    fn block_layout(&self) -> BlockLayout {
        let [_, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let [_, sy, sx] = self.stride;
        let [_, dy, dx] = self.dil;
        let width = (ow - 1) * sx + (kw - 1) * dx + 1;
        let span = (kh - 1) * dy + 1;
        let fit = BAND_BYTES / (width * LANES * 4);
        let band = (fit.saturating_sub(span) / sy + 1).clamp(1, oh);
        let taps: Vec<usize> = (0..kh * kw)
            .map(|t| LANES * ((t / kw) * dy * width + (t % kw) * dx))
            .collect();
        let pieces = ow.div_ceil(MAX_TILE);
        BlockLayout {
            width,
            band,
            span,
            band_rows: (band - 1) * sy + span,
            reach: taps.iter().copied().max().unwrap_or(0),
            taps,
            tiles: (0..pieces)
                .map(|i| (i * ow / pieces, (i + 1) * ow / pieces - i * ow / pieces))
                .collect(),
        }
    }

    /// One block: `lanes` input planes `xs` (one after another) with their weights in lanes
    /// (`[taps][16]`) into the `lanes` output planes `dst`.
    fn block(
        &self,
        xs: &[f32],
        lanes: usize,
        weights: &[f32],
        l: &BlockLayout,
        (padded, sums): (&mut [f32], &mut [f32]),
        dst: &mut [f32],
    ) {
        let [_, ih, iw] = self.input;
        let [_, oh, ow] = self.out;
        let [_, sy, sx] = self.stride;
        let [_, pt, pl] = self.pad;
        let (plane_in, plane_out) = (ih * iw, oh * ow);
        let row_len = l.width * LANES;
        // Input columns inside the padded width.
        let cols = iw.min(l.width.saturating_sub(pl));
        for oy0 in (0..oh).step_by(l.band) {
            let oy1 = (oy0 + l.band).min(oh);
            let r0 = oy0 * sy;
            let rows = (oy1 - oy0 - 1) * sy + l.span;
            // Only the input's cells are written in a row of the input; the columns of
            // padding keep the zeros `padded` was made with. A row of padding is zeroed
            // (another band may have had an input row there).
            for (r, row) in padded.chunks_exact_mut(row_len).take(rows).enumerate() {
                match (r0 + r).checked_sub(pt).filter(|&y| y < ih) {
                    Some(y) => {
                        for j0 in (0..cols).step_by(LANES) {
                            let n = LANES.min(cols - j0);
                            let at = (pl + j0) * LANES;
                            to_lanes(&xs[y * iw + j0..], plane_in, lanes, n, &mut row[at..]);
                        }
                    }
                    None => row.fill(0.0),
                }
            }
            for oy in oy0..oy1 {
                let from = (oy * sy - r0) * row_len;
                for &(ox0, n) in &l.tiles {
                    let out = &mut sums[((oy - oy0) * ow + ox0) * LANES..][..n * LANES];
                    let src = &padded[from + ox0 * sx * LANES..];
                    row_tile(src, sx * LANES, (&l.taps, l.reach), weights, out);
                }
            }
            let positions = (oy1 - oy0) * ow;
            for j0 in (0..positions).step_by(LANES) {
                let n = LANES.min(positions - j0);
                let to = &mut dst[oy0 * ow + j0..];
                from_lanes(&sums[j0 * LANES..], n, lanes, to, plane_out);
            }
        }
    }
}

/// Zeros whose first value starts a cache line: every vector of a block's rows then lies
/// in one line (a load across two costs two of the core's load slots).
struct Aligned {
    buf: Vec<f32>,
    at: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let buf = vec![0f32; len + LANES - 1];
        let at = buf.as_ptr().align_offset(64).min(LANES - 1);
        Aligned { buf, at, len }
    }

    fn get(&mut self) -> &mut [f32] {
        &mut self.buf[self.at..][..self.len]
    }
}

/// `out[16 * t + c]` = the sum over taps `k` in order, by fused multiply-adds from 0, of
/// `w[16 * k + c] * src[taps[k] + t * step + c]`, for `t < out.len() / 16` (1 to
/// [`MAX_TILE`] outputs); `reach` is the greatest of `taps`.
#[inline]
fn row_tile(
    src: &[f32],
    step: usize,
    (taps, reach): (&[usize], usize),
    w: &[f32],
    out: &mut [f32],
) {
    let n = out.len() / LANES;
    debug_assert_eq!(taps.iter().copied().max().unwrap_or(0), reach);
    // Every read below is within these bounds: `src[off + t * step .. + 16]` for `off` in
    // `taps` (none above `reach`) and `t < n`, and `w[.. 16 * taps.len()]`.
    assert!(
        (1..=MAX_TILE).contains(&n)
            && out.len() == n * LANES
            && taps.iter().all(|&off| off <= reach)
            && reach + (n - 1) * step + LANES <= src.len()
            && w.len() >= LANES * taps.len(),
        "depthwise row tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the walk runs only where `supported()` holds (`Depthwise::run` and the tests
    // check it first), each kernel only where its own features do, and the assert above
    // bounds every pointer the kernel reads and writes.
    unsafe {
        let (s, w, o) = (src.as_ptr(), w.as_ptr(), out.as_mut_ptr());
        let wide = crate::avx512f();
        // The step as a constant where it is one (strides 1 and 2: every load's address is
        // one register plus a displacement, with no register spilled for fourteen bases).
        macro_rules! tiles {
            ($($t:literal)*) => {
                match (n, step, wide) {
                    $(
                        ($t, LANES, true) => avx512::row_tile::<$t, LANES>(s, step, taps, w, o),
                        ($t, 32, true) => avx512::row_tile::<$t, 32>(s, step, taps, w, o),
                        ($t, _, true) => avx512::row_tile::<$t, 0>(s, step, taps, w, o),
                        ($t, LANES, false) => avx2::row_tile::<$t, LANES>(s, step, taps, w, o),
                        ($t, 32, false) => avx2::row_tile::<$t, 32>(s, step, taps, w, o),
                        ($t, _, false) => avx2::row_tile::<$t, 0>(s, step, taps, w, o),
                    )*
                    _ => unreachable!("checked above"),
                }
            };
        }
        tiles!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("supported() is false off x86_64");
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// `STEP` is `step` when not 0.
    ///
    /// # Safety
    /// AVX-512F must be available; `src` readable at `off + t * step .. + 16` for `off` in
    /// `taps`, `t < T`; `w` at `.. 16 * taps.len()`; `out` writable at `.. 16 * T`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn row_tile<const T: usize, const STEP: usize>(
        src: *const f32,
        step: usize,
        taps: &[usize],
        w: *const f32,
        out: *mut f32,
    ) {
        let step = if STEP == 0 { step } else { STEP };
        let mut acc = [_mm512_setzero_ps(); T];
        for (k, &off) in taps.iter().enumerate() {
            let wk = _mm512_loadu_ps(w.add(16 * k));
            let at = src.add(off);
            for (t, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(wk, _mm512_loadu_ps(at.add(t * step)), *a);
            }
        }
        for (t, a) in acc.iter().enumerate() {
            _mm512_storeu_ps(out.add(16 * t), *a);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::avx512::row_tile`] on AVX2: the same sums, each half of the sixteen lanes in
    /// its own pass.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the bounds are those of
    /// [`super::avx512::row_tile`].
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn row_tile<const T: usize, const STEP: usize>(
        src: *const f32,
        step: usize,
        taps: &[usize],
        w: *const f32,
        out: *mut f32,
    ) {
        let step = if STEP == 0 { step } else { STEP };
        for half in [0, 8] {
            let (src, w, out) = (src.add(half), w.add(half), out.add(half));
            let mut acc = [_mm256_setzero_ps(); T];
            for (k, &off) in taps.iter().enumerate() {
                let wk = _mm256_loadu_ps(w.add(16 * k));
                let at = src.add(off);
                for (t, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(wk, _mm256_loadu_ps(at.add(t * step)), *a);
                }
            }
            for (t, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(out.add(16 * t), *a);
            }
        }
    }
}
