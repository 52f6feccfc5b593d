//! The position tile: `MR` output channels by up to `NR` flat positions, the (input channel,
//! tap) steps summed by fused multiply-adds in one order, with an AVX-512 kernel and an
//! AVX2 one that give the same bits. The direct convolution's blocks and Winograd's channel
//! products run on it.

use super::{MR, NR};
use crate::simd::{unit, Unit};

/// Input bytes of a tile's planes past which the AVX2 kernel fetches the next tile's inputs:
/// about the L2 of one core.
const FETCH_AHEAD_BYTES: usize = 1 << 20;

/// `acc[r][i]` = the output of channel `r` of the tile at flat position `q0 + i`: for each
/// input channel `c`, for each tap, `w[r][(c, tap)] * x[c * plane + q0 + tap offset + i]`,
/// summed in that order by fused multiply-adds from 0; `w` holds the tile's `MR` rows, of
/// which the first `rows` are needed (the AVX2 kernel leaves the others as they were: a
/// detection head's 5 channels would otherwise cost 8).
#[allow(clippy::too_many_arguments)]
pub(super) fn tile(
    rows: usize,
    vectors: usize,
    w: &[f32],
    x: &[f32],
    plane: usize,
    taps: &[usize],
    q0: usize,
    acc: &mut [[f32; NR]; MR],
) {
    let ci = x.len() / plane;
    let reach = taps.iter().copied().max().unwrap_or(0);
    // Every read below is within these bounds: the kernel reads `x[c * plane + q0 + off ..
    // + 16 * vectors]` for c < ci and off <= reach, and `w[.. ci * taps * MR]`.
    assert!(
        x.len() >= ci * plane
            && (1..=NR / 16).contains(&vectors)
            && (ci == 0 || q0 + reach + 16 * vectors <= plane)
            && w.len() >= ci * taps.len() * MR,
        "tile out of bounds"
    );
    // Inputs past L2 are fetched a tile ahead on AVX2 (see `avx2::tile`); within it the
    // prefetches only cost load slots (ResNet-18's 56x56 layers ran 6-10% slower with them).
    let fetch = ci * plane * std::mem::size_of::<f32>() > FETCH_AHEAD_BYTES;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: callers construct `DirectFilters` only where `supported()` holds, so `unit()`
    // is AVX-512 or AVX2 with FMA on this CPU, and the assert above bounds every pointer the
    // kernel reads.
    unsafe {
        let (w, x) = (w.as_ptr(), x.as_ptr());
        match (unit(), vectors) {
            (Unit::Avx512, 1) => avx512::tile::<1>(w, x, plane, ci, taps, q0, acc),
            (Unit::Avx512, 2) => avx512::tile::<2>(w, x, plane, ci, taps, q0, acc),
            (Unit::Avx512, _) => avx512::tile::<3>(w, x, plane, ci, taps, q0, acc),
            (_, 1) => avx2::tile::<1>(rows, w, x, plane, ci, taps, q0, fetch, acc),
            (_, 2) => avx2::tile::<2>(rows, w, x, plane, ci, taps, q0, fetch, acc),
            (_, _) => avx2::tile::<3>(rows, w, x, plane, ci, taps, q0, fetch, acc),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("DirectFilters::supported() is false off x86_64");
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::{MR, NR};
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `x` must be readable at `c * plane + q0 + off + i` for
    /// `c < ci`, `off` in `taps`, `i < 16 * V`, and `w` at `0 .. MR * ci * taps.len()` (the
    /// tile's rows one after another); `V <= NR / 16`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn tile<const V: usize>(
        w: *const f32,
        x: *const f32,
        plane: usize,
        ci: usize,
        taps: &[usize],
        q0: usize,
        out: &mut [[f32; NR]; MR],
    ) {
        let mut acc = [[_mm512_setzero_ps(); V]; MR];
        let k = ci * taps.len();
        let rows: [*const f32; MR] = std::array::from_fn(|r| w.add(r * k));
        let mut kk = 0;
        for c in 0..ci {
            let xc = x.add(c * plane + q0);
            for &off in taps {
                let next = xc.wrapping_add(plane + off) as *const i8;
                _mm_prefetch::<_MM_HINT_T0>(next);
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64 * V));
                let mut b = [_mm512_setzero_ps(); V];
                for (v, b) in b.iter_mut().enumerate() {
                    *b = _mm512_loadu_ps(xc.add(off + 16 * v));
                }
                for (a, row) in acc.iter_mut().zip(&rows) {
                    let f = _mm512_set1_ps(*row.add(kk));
                    for (a, &b) in a.iter_mut().zip(&b) {
                        *a = _mm512_fmadd_ps(f, b, *a);
                    }
                }
                kk += 1;
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            for (v, a) in a.iter().enumerate() {
                _mm512_storeu_ps(o.as_mut_ptr().add(16 * v), *a);
            }
        }
    }
}

/// The same tile for CPUs with AVX2 and FMA but not AVX-512: 8-lane vectors and 16 registers,
/// so the `MR x 16 V` tile runs as blocks of 4 channels by 2 vectors (8 accumulators; 12
/// spilled to the stack when the block was 3 vectors wide), or 5 or 6 channels when that is
/// all that is left. The blocks take the (input channel, tap) steps 128 at a time,
/// keeping their sums in `out` between chunks: a chunk's filter values stay in L1 for every
/// block, and its inputs for the second block of channels (one pass over all steps per block
/// read the filters of a 512-channel layer from L2 four times per tile). Every output is the
/// same fused multiply-add chain in the same order as on AVX-512 (a sum stored and reloaded
/// keeps its bits): the two give the same results.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::{MR, NR};
    use std::arch::x86_64::*;

    /// Channels of a register block.
    const ROWS: usize = 4;
    /// (input channel, tap) steps per chunk: 4 rows of them are 2 KB of filters.
    const CHUNK: usize = 128;

    /// [`super::avx512::tile`] on AVX2, for the first `rows` (at most `MR`) rows.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the bounds are those of [`super::avx512::tile`].
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn tile<const V: usize>(
        rows: usize,
        w: *const f32,
        x: *const f32,
        plane: usize,
        ci: usize,
        taps: &[usize],
        q0: usize,
        fetch: bool,
        out: &mut [[f32; NR]; MR],
    ) {
        let k = ci * taps.len();
        let rows = rows.min(MR);
        if k == 0 {
            for o in out.iter_mut() {
                o[..16 * V].fill(0.0);
            }
            return;
        }
        // Each chunk's steps as offsets from the tile's first input: one flat loop over
        // them, where a loop over taps inside one over channels ran a single step per
        // channel for Winograd's products and 1x1 filters, and its bookkeeping spilled
        // accumulators to the stack.
        let mut offsets = [0usize; CHUNK];
        let (mut c, mut t) = (0, 0);
        let x = x.add(q0);
        for s0 in (0..k).step_by(CHUNK) {
            let steps = CHUNK.min(k - s0);
            for o in &mut offsets[..steps] {
                *o = c * plane + taps[t];
                t += 1;
                if t == taps.len() {
                    (c, t) = (c + 1, 0);
                }
            }
            let offsets = &offsets[..steps];
            let mut first = 0;
            while first < rows {
                // Five or six rows left run as one block (10 or 12 accumulators, with the
                // two inputs and a broadcast 15 of the 16 registers): a block of one or two
                // rows after four loads three values per two multiply-adds, and a 5-channel
                // detection head ran a fifth of its steps so.
                let here = match rows - first {
                    left @ (5 | 6) => left,
                    left => left.min(ROWS),
                };
                let w = w.add(first * k + s0);
                let out = &mut out[first..first + here];
                // The first block of rows fetches the next tile's inputs at each step
                // (`fetch`: planes past L2): a step's input is a line of another channel's
                // plane, too many streams for the hardware prefetcher (a 64 -> 5 head on
                // 160x160 read them from L3 at a third of the FMA rate).
                let fetch_now = fetch && first == 0;
                // 16 V positions: 2 V vectors of 8, two at a time (three at a time, 12
                // accumulators, spilled to the stack and ran 20-70% slower).
                for col in (0..16 * V).step_by(16) {
                    let x = x.add(col);
                    let from_zero = s0 == 0;
                    macro_rules! run {
                        ($r:literal) => {
                            if fetch_now {
                                block::<$r, 2, true>(w, k, x, offsets, from_zero, col, out)
                            } else {
                                block::<$r, 2, false>(w, k, x, offsets, from_zero, col, out)
                            }
                        };
                    }
                    match here {
                        6 => run!(6),
                        5 => run!(5),
                        4 => run!(4),
                        3 => run!(3),
                        2 => run!(2),
                        _ => run!(1),
                    }
                }
                first += here;
            }
        }
    }

    /// `out[r][col .. col + 8 C]` for `R` filter rows (row `r` at `w + r k`, from the
    /// chunk's first step), carried through the chunk's steps (`x` plus each offset); the
    /// first chunk starts from zero, the others from `out`.
    ///
    /// # Safety
    /// As [`tile`], with `col + 8 C <= 16 V` of the calling tile.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn block<const R: usize, const C: usize, const FETCH: bool>(
        w: *const f32,
        k: usize,
        x: *const f32,
        offsets: &[usize],
        from_zero: bool,
        col: usize,
        out: &mut [[f32; NR]],
    ) {
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        if !from_zero {
            for (a, o) in acc.iter_mut().zip(out.iter()) {
                for (v, a) in a.iter_mut().enumerate() {
                    *a = _mm256_loadu_ps(o.as_ptr().add(col + 8 * v));
                }
            }
        }
        let rows: [*const f32; R] = std::array::from_fn(|r| w.add(r * k));
        for (kk, &o) in offsets.iter().enumerate() {
            if FETCH {
                // The same step `NR` positions on: the next tile's, or one after it (a tile
                // is at most `NR` positions). A prefetch never faults; the address need not
                // be inside `x`'s allocation.
                _mm_prefetch::<_MM_HINT_T0>(x.wrapping_add(o + NR) as *const i8);
            }
            let b: [__m256; C] = std::array::from_fn(|v| _mm256_loadu_ps(x.add(o + 8 * v)));
            for (a, row) in acc.iter_mut().zip(&rows) {
                let f = _mm256_broadcast_ss(&*row.add(kk));
                for (a, &b) in a.iter_mut().zip(&b) {
                    *a = _mm256_fmadd_ps(f, b, *a);
                }
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            for (v, a) in a.iter().enumerate() {
                _mm256_storeu_ps(o.as_mut_ptr().add(col + 8 * v), *a);
            }
        }
    }
}
