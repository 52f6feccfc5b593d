//! Tiles whose vector lanes hold output channels, for convolutions of many input channels by
//! taps ([`suits`]).
//!
//! The tiles of `mod.rs` hold flat positions of the padded plane in their lanes, and compute
//! every position of a tile: the `wp - ow` padding positions at the end of each output row
//! and the rounding of a plane to whole 16-lane vectors. At 56x56 that is 4% more work; at
//! 14x14 (224 positions computed for 196) 14%, at 7x7 (64 for 49) 31%. Here a tile is up to
//! [`MAX_P`] outputs of one output row (no padding position, no rounding) by [`OC`] output
//! channels, the channels in the lanes: each input value is broadcast and multiplied by a
//! vector of filter values, which are packed (`[co / OC][ci][taps][OC]`) on the first run
//! that uses them.
//!
//! Each output is the same chain of fused multiply-adds as in `mod.rs`: over (input channel,
//! tap) in that order, from 0, so the two tilings give bit-identical results and the choice
//! between them is only one of speed.

use std::sync::OnceLock;

use super::Layout;
use crate::op::{codes, OpError};
use crate::par;

/// Output channels of a tile: two 16-lane vectors.
pub(super) const OC: usize = 32;
/// Outputs of a tile, at most: 14 positions by 2 vectors are 28 accumulators, which leave
/// registers for the 2 filter vectors and a broadcast.
const MAX_P: usize = 14;

/// Bytes of filters a task's tiles run through before they move on to the next input
/// channels (see [`ChannelFilters::run`]).
const CI_BLOCK_BYTES: usize = 32 << 10;

/// Bytes of partial sums a task keeps while it runs the input channel blocks.
const SUMS_BYTES: usize = 64 << 10;

/// Filters `[co, ci, taps]` packed by blocks of [`OC`] output channels, each block
/// `[ci][taps][OC]` with zeros past the last channel.
pub(super) struct ChannelFilters {
    k: usize,
    packed: Vec<f32>,
}

/// Sizes only: the packed filters run to megabytes.
impl std::fmt::Debug for ChannelFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ChannelFilters(k {}, {} values)",
            self.k,
            self.packed.len()
        )
    }
}

impl ChannelFilters {
    pub(super) fn new(w: &[f32], co: usize, k: usize) -> Result<ChannelFilters, OpError> {
        let block = k * OC;
        let blocks = co.div_ceil(OC);
        let len = blocks
            .checked_mul(block)
            .ok_or_else(|| OpError::new(codes::MEMORY, "the packed filters overflow memory"))?;
        let packed = par::build(len, block.max(1), &|start, fill| {
            let mut b = start / block.max(1);
            while fill.remaining() > 0 {
                for kk in 0..k {
                    for j in 0..OC {
                        let o = b * OC + j;
                        fill.push(if o < co { w[o * k + kk] } else { 0.0 });
                    }
                }
                b += 1;
            }
        })?;
        Ok(ChannelFilters { k, packed })
    }

    pub(super) fn byte_size(&self) -> usize {
        self.packed.len() * 4
    }

    /// The convolution of `padded` (`n` items of `ci` channels, as `mod.rs` pads them) into
    /// `[n, co, *l.out]`, calling `each` on each channel's outputs once computed.
    pub(super) fn run(
        &self,
        l: &Layout,
        n: usize,
        co: usize,
        padded: &[f32],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        let [oh, ow] = l.out;
        let positions = oh * ow;
        let channels = n * co;
        let item_len = padded.len() / n.max(1);
        // Tiles per output row, of near-equal widths.
        let per_row = ow.div_ceil(MAX_P);
        let taps = l.taps.len();
        let ci = self.k / taps.max(1);
        // Input channels whose filters (for one block of output channels) take 32 KB.
        let ci_block = (CI_BLOCK_BYTES / (4 * OC * taps.max(1))).max(1);
        let tiles = oh * per_row;
        let group = (SUMS_BYTES / (4 * OC * MAX_P)).max(1);
        par::build(
            channels * positions,
            (OC * positions).max(1),
            &|start, fill| {
                let mut sums = vec![[[0f32; OC]; MAX_P]; group.min(tiles)];
                let mut g = start / positions.max(1);
                while fill.remaining() > 0 && g < channels {
                    // Channels `c .. c + rows` of item `item`, from lane `first` of block
                    // `c / OC` (a chunk starts on a block unless `co` is not a multiple of OC).
                    let (item, c) = (g / co, g % co);
                    let (block, first) = (c / OC, c % OC);
                    let rows = (OC - first)
                        .min(co - c)
                        .min(fill.remaining() / positions.max(1));
                    let w = &self.packed[block * self.k * OC..][..self.k * OC];
                    let xi = &padded[item * item_len..][..item_len];
                    let done = fill.repeat_mut(0.0, rows * positions);
                    // A group of tiles over a block of input channels, then the next block:
                    // each block's filters are read from memory once per group and then from
                    // cache, where a whole row's (590 KB at ResNet's 7x7) came from memory in
                    // one burst and stalled the multiply-adds. Groups keep the partial sums
                    // in cache (a 112x112 plane's would take 1.6 MB).
                    for g0 in (0..tiles).step_by(group) {
                        let sums = &mut sums[..(tiles - g0).min(group)];
                        let at = |i: usize| {
                            let (oy, t) = ((g0 + i) / per_row, (g0 + i) % per_row);
                            let (x0, x1) = (ow * t / per_row, ow * (t + 1) / per_row);
                            (oy, x0, x1 - x0)
                        };
                        for c0 in (0..ci).step_by(ci_block) {
                            let c1 = (c0 + ci_block).min(ci);
                            let w = &w[c0 * taps * OC..c1 * taps * OC];
                            let x = &xi[c0 * l.plane..c1 * l.plane];
                            for (i, sums) in sums.iter_mut().enumerate() {
                                let (oy, x0, width) = at(i);
                                tile(w, x, l, oy * l.wp + x0, width, c0 > 0, sums);
                            }
                        }
                        for (i, sums) in sums.iter().enumerate() {
                            let (oy, x0, width) = at(i);
                            to_planes(sums, width, first, (&mut *done, positions), oy * ow + x0);
                        }
                    }
                    each(g * positions, done);
                    g += rows;
                }
            },
        )
    }
}

/// `out[p][j]` = output channel `j` of the block `w` at flat position `q + p` of the padded
/// input channels `x`, for `p < width`: over each input channel `c` and tap, `w[(c,
/// tap)][j] * x[c * plane + q + p + tap offset]`, summed in that order by fused
/// multiply-adds from 0, or from `out`'s values when `more` (the sums so far, over earlier
/// input channels: stored and reloaded, so the chain is the same).
fn tile(
    w: &[f32],
    x: &[f32],
    l: &Layout,
    q: usize,
    width: usize,
    more: bool,
    out: &mut [[f32; OC]; MAX_P],
) {
    let ci = x.len() / l.plane.max(1);
    let reach = l.taps.iter().copied().max().unwrap_or(0);
    // Every read below is within these bounds: `x[c * plane + q + off + p]` for c < ci, off
    // <= reach, p < width, and `w[.. ci * taps * OC]`.
    assert!(
        (1..=MAX_P).contains(&width)
            && (ci == 0 || q + reach + width <= l.plane)
            && w.len() >= ci * l.taps.len() * OC,
        "tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `ChannelFilters` runs only where `DirectFilters::supported()` (AVX-512F)
    // holds, and the assert above bounds every pointer the kernel reads.
    unsafe {
        // The next block of input channels starts where this one's filters end.
        let ahead = w.len();
        let (w, x, plane, taps) = (w.as_ptr(), x.as_ptr(), l.plane, &l.taps[..]);
        macro_rules! widths {
            ($($p:literal)*) => {
                match width {
                    $($p => avx512::tile::<$p>(w, x, plane, ci, taps, q, more, ahead, out),)*
                    _ => unreachable!("checked above"),
                }
            };
        }
        widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("DirectFilters::supported() is false off x86_64");
}

/// Writes lanes `first..` of the tile `sums` (its `width` positions) into the channel
/// planes of `dst` (`[rows][step]`, `rows = dst.len() / step`), from position `at` of each:
/// a transposition, by 16 x 16 blocks in registers (the scalar loop it replaces took a
/// twentieth of ResNet-18's time, a gather per channel a twentieth of PointPillars' stride-2
/// layer).
fn to_planes(
    sums: &[[f32; OC]; MAX_P],
    width: usize,
    first: usize,
    (dst, step): (&mut [f32], usize),
    at: usize,
) {
    let rows = dst.len() / step.max(1);
    assert!(
        width <= MAX_P && first + rows <= OC && at + width <= step,
        "transposition out of bounds"
    );
    let src: &[u32] = bytemuck::cast_slice(sums.as_flattened());
    let dst: &mut [u32] = bytemuck::cast_slice_mut(dst);
    for r0 in (0..rows).step_by(16) {
        let n = 16.min(rows - r0);
        // Source row `p` (a position) is `sums[p]`, its lanes from `first + r0`; destination
        // row `r` (a channel) starts at position `at` of plane `r0 + r`.
        irun_opkit::transpose16::block(
            (&src[first + r0..], OC),
            width,
            n,
            (&mut dst[r0 * step + at..], step),
        );
    }
}

/// Whether the channel tiles run a convolution of `k` multiply-adds per output (input
/// channels by taps) on the planes of `l` faster than the position tiles. Measured here (2
/// threads) on ResNet-18's and PointPillars' layers: with k >= 256, 12-13% faster at 7x7
/// and 14x14 (where position tiles compute 31% and 14% padding positions), 2-7% at 28x28 to
/// 128x128, 3% slower on one 256x256 layer. Below that the tiles' transposition and short
/// sums tell, unless the position tiles waste a tenth of their work or are one vector wide
/// (8 broadcasts and a load per 8 multiply-adds: bound by loads): a 1x1 stride-2 layer with
/// k = 128 onto 14x14 (one vector) runs 33% faster by channels, one with k = 64 onto 28x28
/// 9% slower, a 3-channel 7x7 stem (k = 147, 3% padding, 3 vectors) 10% slower. Nor when
/// `co` output channels leave more than an eighth of the tiles' [`OC`] lanes empty: a
/// detector's 64 -> 5 channel 3x3 head onto 160x160 (k = 576) filled 5 of 32 lanes and ran
/// in 9.3-9.8 ms, against 1.3-1.5 by position tiles; 64 -> 20 channels 9.5-10.1 against
/// 4.1-4.5 (Zen 4, 2 threads). Full tiles keep their lead there (ResNet-18's 7x7 layers
/// 1.1-1.4 ms against 1.4-1.7, the model 18.2-18.6 against 19.3-23).
pub(super) fn suits(l: &Layout, k: usize, co: usize) -> bool {
    fills_lanes(co) && suits_sizes(l.flat(), l.out, l.vectors, k)
}

/// Whether `co` output channels fill at least seven eighths of the channel tiles' lanes.
pub(super) fn fills_lanes(co: usize) -> bool {
    co.next_multiple_of(OC) * 8 <= co * 9
}

/// [`suits`] from the layout's sizes: `flat` positions computed for the `out` plane, by
/// tiles of `vectors` vectors.
pub(super) fn suits_sizes(flat: usize, out: [usize; 2], vectors: usize, k: usize) -> bool {
    let wasteful = flat * 10 >= out[0] * out[1] * 11 || vectors == 1;
    k >= 256 || (k >= 128 && wasteful)
}

/// Whether this CPU runs the channel tiles: they are written for AVX-512 only.
pub(super) fn available() -> bool {
    crate::simd::unit() == crate::simd::Unit::Avx512
}

/// The packed filters, made on the first call and kept; `None` if they cannot be held.
pub(super) fn packed<'a>(
    cell: &'a OnceLock<Option<ChannelFilters>>,
    w: &[f32],
    co: usize,
    k: usize,
) -> Option<&'a ChannelFilters> {
    cell.get_or_init(|| ChannelFilters::new(w, co, k).ok())
        .as_ref()
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MAX_P, OC};
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `x` must be readable at `c * plane + q + off + p` for `c
    /// < ci`, `off` in `taps`, `p < P`, and `w` at `0 .. ci * taps.len() * OC`; `P <= MAX_P`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn tile<const P: usize>(
        w: *const f32,
        x: *const f32,
        plane: usize,
        ci: usize,
        taps: &[usize],
        q: usize,
        more: bool,
        ahead: usize,
        out: &mut [[f32; OC]; MAX_P],
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; P];
        if more {
            for (a, o) in acc.iter_mut().zip(out.iter()) {
                a[0] = _mm512_loadu_ps(o.as_ptr());
                a[1] = _mm512_loadu_ps(o.as_ptr().add(16));
            }
        }
        let mut wk = w;
        for c in 0..ci {
            let xc = x.add(c * plane + q);
            for &off in taps {
                let w0 = _mm512_loadu_ps(wk);
                let w1 = _mm512_loadu_ps(wk.add(16));
                // The same filters of the next block of input channels, into L2 while this
                // block runs (ResNet's 7x7 layers otherwise waited for them). A prefetch is a
                // hint that never faults, past the filters' end included.
                let next = wk.wrapping_add(ahead) as *const i8;
                _mm_prefetch::<_MM_HINT_T1>(next);
                _mm_prefetch::<_MM_HINT_T1>(next.wrapping_add(64));
                let xs = xc.add(off);
                for (p, a) in acc.iter_mut().enumerate() {
                    let b = _mm512_set1_ps(*xs.add(p));
                    a[0] = _mm512_fmadd_ps(w0, b, a[0]);
                    a[1] = _mm512_fmadd_ps(w1, b, a[1]);
                }
                wk = wk.add(OC);
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            _mm512_storeu_ps(o.as_mut_ptr(), a[0]);
            _mm512_storeu_ps(o.as_mut_ptr().add(16), a[1]);
        }
    }
}
