//! The phase walk of the depthwise convolution (AVX-512 or AVX2 with FMA): each input plane
//! padded and split into the phases of its stride, so that every tap of a tile of outputs is
//! one contiguous run; tiles of up to eight vectors of outputs add their taps by fused
//! multiply-adds in registers. Each output is one FMA chain over its taps in order from 0
//! whatever the vector width, so both units give the same bits.

use super::Depthwise;
use crate::op::OpError;

/// Where a walk by phases reads and writes: phases of `hp` rows of `wp`, each tap's offset
/// from a flat position (`taps`, the greatest `reach`), tiles of `width` flat positions over
/// `flat` of them (every output row and the columns after it up to `wp`), in a buffer of
/// `buf_len` (the phases, and room for the last tile's reads past them).
pub(crate) struct PhaseLayout {
    pub hp: usize,
    pub wp: usize,
    pub taps: Vec<usize>,
    pub reach: usize,
    pub width: usize,
    pub flat: usize,
    pub buf_len: usize,
}

impl Depthwise {
    /// Each input plane padded and split into the phases of its stride (rows `a, a + sy,
    /// ...` and columns `b, b + sx, ...` of the padded plane), so that one tap of every
    /// output is one contiguous run of one phase, and each output row with the columns after
    /// it up to the phase's width is one run of flat positions. Tiles of up to eight vectors of
    /// flat positions add every tap by fused multiply-adds in registers and are stored once;
    /// the flat positions past each output row are dropped. Padding taps add `w * 0 = ±0`,
    /// which leaves every sum as the in-bounds taps alone give it, for finite weights.
    pub fn by_phases(&self, x: &[f32], w: &[f32]) -> Result<Vec<f32>, OpError> {
        let l = self.phase_layout();
        let [_, oh, ow] = self.out;
        self.for_each_plane(
            x,
            w,
            &|| (vec![0f32; l.buf_len], vec![0f32; l.flat]),
            #[inline(always)]
            |xc, wc, out, (buf, wide)| {
                self.fill_phases(xc, [l.hp, l.wp], buf);
                tiles(l.width, buf, wc, (&l.taps, l.reach), wide);
                crate::rows::pack_rows(wide, l.wp, oh, ow);
                out.extend_from_slice(&wide[..oh * ow]);
            },
        )
    }

    /// Where a walk by phases reads and writes (this geometry's, at most two spatial dims).
    pub(crate) fn phase_layout(&self) -> PhaseLayout {
        let [_, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let [_, sy, sx] = self.stride;
        let [_, dy, dx] = self.dil;
        // Phase rows and columns: output row `y` with tap row `a` reads phase row
        // `y + a * dy / sy`.
        let hp = oh + (kh - 1) * dy / sy;
        let wp = ow + (kw - 1) * dx / sx;
        let phase_len = hp * wp;
        let taps: Vec<usize> = (0..kh * kw)
            .map(|t| {
                let (a, b) = (t / kw * dy, t % kw * dx);
                ((a % sy) * sx + b % sx) * phase_len + (a / sy) * wp + b / sx
            })
            .collect();
        let width = width_for(oh * wp);
        let flat = (oh * wp).div_ceil(width) * width;
        let reach = taps.iter().copied().max().unwrap_or(0);
        PhaseLayout {
            hp,
            wp,
            // Room for every phase, and for the last tile's reads past the last phase.
            buf_len: (sy * sx * phase_len).max(reach + flat),
            taps,
            reach,
            width,
            flat,
        }
    }

    /// Writes input plane `xc` into its phases in `buf` (phase `(a, b)` at `(a * sx + b) *
    /// hp * wp`, rows of `wp`): each value at the phase, row and column of its place in the
    /// padded plane, where the phases reach it. Every plane writes the same places, so the
    /// rest of `buf` (the padding, and the tail past the phases) keeps the values it was made
    /// with (zeros for a convolution, `-inf` for a max pool).
    #[inline(always)]
    pub(crate) fn fill_phases(&self, xc: &[f32], [hp, wp]: [usize; 2], buf: &mut [f32]) {
        let [_, _, iw] = self.input;
        let [_, sy, sx] = self.stride;
        let [_, pt, pl] = self.pad;
        let phase_len = hp * wp;
        let ih = xc.len() / iw;
        if sx == 1 {
            // Each row phase at once: input rows `r0, r0 + sy, ...` are its rows from `i0`.
            let n = iw.min(wp.saturating_sub(pl));
            for a in 0..sy {
                let r0 = (a + sy - pt % sy) % sy;
                let i0 = (r0 + pt) / sy;
                let rows = ih
                    .saturating_sub(r0)
                    .div_ceil(sy)
                    .min(hp.saturating_sub(i0));
                if rows > 0 {
                    let dst = &mut buf[a * phase_len + i0 * wp + pl..];
                    crate::rows::copy_rows((&xc[r0 * iw..], sy * iw), (dst, wp), rows, n);
                }
            }
            return;
        }
        for (r, src) in xc.chunks_exact(iw).enumerate() {
            let (a, i) = ((r + pt) % sy, (r + pt) / sy);
            if i >= hp {
                break;
            }
            let row = |b: usize| (a * sx + b) * phase_len + i * wp;
            match sx {
                2 => {
                    // Input column `2m` is padded column `2m + pl`: phase `pl % 2`, column
                    // `m + pl / 2`; column `2m + 1` phase `(pl + 1) % 2`, column
                    // `m + (pl + 1) / 2`. Pairs, which vectorise.
                    let (even_at, odd_at) =
                        (row(pl % 2) + pl / 2, row((pl + 1) % 2) + pl.div_ceil(2));
                    let evens = iw.div_ceil(2).min(wp.saturating_sub(pl / 2));
                    let odds = (iw / 2).min(wp.saturating_sub(pl.div_ceil(2)));
                    let pairs = src.chunks_exact(2);
                    let last = pairs.remainder().first().copied();
                    for (d, pair) in buf[even_at..][..evens].iter_mut().zip(pairs.clone()) {
                        *d = pair[0];
                    }
                    if let Some(v) = last.filter(|_| evens == iw.div_ceil(2)) {
                        buf[even_at + evens - 1] = v;
                    }
                    for (d, pair) in buf[odd_at..][..odds].iter_mut().zip(pairs) {
                        *d = pair[1];
                    }
                }
                _ => {
                    for (c, &v) in src.iter().enumerate() {
                        let (b, j) = ((c + pl) % sx, (c + pl) / sx);
                        if j < wp {
                            buf[row(b) + j] = v;
                        }
                    }
                }
            }
        }
    }
}

/// 16-lane vectors per tile, at most: eight independent chains of multiply-adds (a chain
/// adds an output's taps in order, so only other outputs can fill the FMA unit's
/// latency).
const MAX_VECTORS: usize = 8;

/// Whether this CPU runs [`tiles`]: AVX-512F, or AVX2 with FMA.
pub(crate) fn supported() -> bool {
    crate::avx512f() || crate::simd::unit() != crate::simd::Unit::Baseline
}

/// The tile width in flat positions for `flat` of them: all in one tile when they fit
/// (a 7x7 output under a 5x5 kernel has 77 flat positions: one tile of 80, five
/// chains), else from four to eight vectors, whichever computes the fewest past `flat`
/// (the wider on a tie).
pub(super) fn width_for(flat: usize) -> usize {
    let vectors = flat.div_ceil(16).max(1);
    if vectors <= MAX_VECTORS {
        return 16 * vectors;
    }
    (4..=MAX_VECTORS)
        .rev()
        .map(|v| 16 * v)
        .min_by_key(|&w| flat.div_ceil(w) * w)
        .unwrap_or(16 * MAX_VECTORS)
}

/// Whether tiles of `width` positions over `out_len` outputs read `buf` only at `off + q`
/// for `off` in `taps` (none above `reach`) and `q < out_len`, the bound both tile kernels'
/// pointers rely on.
fn tiles_fit(width: usize, buf: &[f32], (taps, reach): (&[usize], usize), out_len: usize) -> bool {
    taps.iter().all(|&off| off <= reach)
        && (1..=MAX_VECTORS).contains(&(width / 16))
        && width.is_multiple_of(16)
        && out_len.is_multiple_of(width)
        && reach + out_len <= buf.len()
}

/// Calls `avx512::$kernel` with tiles of `width / 16` 16-lane vectors where the CPU has
/// AVX-512F, else `avx2::$kernel` with tiles of 8-lane vectors: one tile of twice as many up to
/// four 16-lane vectors, two of as many above, so that at most eight accumulators, a broadcast
/// and a load fill the sixteen registers. Expands to calls of `unsafe fn`s: use it inside an
/// `unsafe` block that states why the unit and the bounds hold.
#[cfg(target_arch = "x86_64")]
macro_rules! by_unit {
    ($width:expr, $kernel:ident($($arg:expr),*)) => {
        if crate::avx512f() {
            match $width / 16 {
                1 => avx512::$kernel::<1>($($arg),*),
                2 => avx512::$kernel::<2>($($arg),*),
                3 => avx512::$kernel::<3>($($arg),*),
                4 => avx512::$kernel::<4>($($arg),*),
                5 => avx512::$kernel::<5>($($arg),*),
                6 => avx512::$kernel::<6>($($arg),*),
                7 => avx512::$kernel::<7>($($arg),*),
                _ => avx512::$kernel::<8>($($arg),*),
            }
        } else {
            match $width / 16 {
                1 => avx2::$kernel::<2>($($arg),*),
                2 => avx2::$kernel::<4>($($arg),*),
                3 => avx2::$kernel::<6>($($arg),*),
                4 => avx2::$kernel::<8>($($arg),*),
                5 => avx2::$kernel::<5>($($arg),*),
                6 => avx2::$kernel::<6>($($arg),*),
                7 => avx2::$kernel::<7>($($arg),*),
                _ => avx2::$kernel::<8>($($arg),*),
            }
        }
    };
}

/// `out[q] = sum over taps k, in order, of w[k] * buf[taps[k] + q]` by fused
/// multiply-adds from 0, for every `q < out.len()`, in tiles of `width` positions
/// ([`width_for`]; `out.len()` a whole number of them).
/// `reach` is the greatest of `taps` (worked out once per convolution, not per plane).
#[inline(always)]
pub(super) fn tiles(
    width: usize,
    buf: &[f32],
    w: &[f32],
    (taps, reach): (&[usize], usize),
    out: &mut [f32],
) {
    // Every read below is within these bounds: `buf[off + q .. + width]` for `off` in
    // `taps` (none above `reach`) and tiles `q` of `out`, and `w[.. taps.len()]`.
    debug_assert_eq!(taps.iter().copied().max().unwrap_or(0), reach);
    assert!(
        tiles_fit(width, buf, (taps, reach), out.len()) && w.len() >= taps.len(),
        "depthwise tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `by_phases` runs only where `supported()` holds: AVX-512F, or else AVX2 and FMA,
    // which `by_unit!` picks between. The assert above bounds every pointer the kernels read
    // and write (the AVX2 tiles are `8 * A` positions, which divide the checked `width`).
    unsafe {
        let (buf, w) = (buf.as_ptr(), w.as_ptr());
        by_unit!(width, tiles(buf, w, taps, out));
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("supported() is false off x86_64");
}

/// `out[q]` = the greatest of `buf[taps[k] + q]` over taps `k` in order, each taken only
/// when strictly greater than the greatest so far (from `-inf`: a NaN never wins, and of
/// equal values, ±0 among them, the first stays), for every `q < out.len()`, in tiles of
/// `width` positions held in registers across the taps (MaxPool's values by phases).
pub(crate) fn max_tiles(
    width: usize,
    buf: &[f32],
    (taps, reach): (&[usize], usize),
    out: &mut [f32],
) {
    assert!(
        tiles_fit(width, buf, (taps, reach), out.len()),
        "max tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: MaxPool takes this path only where `supported()` holds: AVX-512F, or else AVX2,
    // which `by_unit!` picks between. The assert above bounds every pointer the kernels read
    // and write (the AVX2 tiles are `8 * A` positions, which divide the checked `width`).
    unsafe {
        let buf = buf.as_ptr();
        by_unit!(width, max_tiles(buf, taps, out));
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("supported() is false off x86_64");
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `buf` readable at `off + q + i` for `off` in `taps`,
    /// `q + i < out.len()`; `out.len()` a multiple of `16 * V`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn max_tiles<const V: usize>(buf: *const f32, taps: &[usize], out: &mut [f32]) {
        for (t, o) in out.chunks_exact_mut(16 * V).enumerate() {
            let at = buf.add(t * 16 * V);
            let mut best = [_mm512_set1_ps(f32::NEG_INFINITY); V];
            for &off in taps {
                for (v, b) in best.iter_mut().enumerate() {
                    // `vmaxps a, b` is `a > b ? a : b`, the second operand when either is
                    // NaN or both are equal: the tap wins only when strictly greater.
                    *b = _mm512_max_ps(_mm512_loadu_ps(at.add(off + 16 * v)), *b);
                }
            }
            for (v, b) in best.iter().enumerate() {
                _mm512_storeu_ps(o.as_mut_ptr().add(16 * v), *b);
            }
        }
    }

    /// # Safety
    /// AVX-512F must be available; `buf` readable at `off + q + i` for `off` in `taps`,
    /// `q + i < out.len()`; `w` at `..taps.len()`; `out.len()` a multiple of `16 * V`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn tiles<const V: usize>(
        buf: *const f32,
        w: *const f32,
        taps: &[usize],
        out: &mut [f32],
    ) {
        for (t, o) in out.chunks_exact_mut(16 * V).enumerate() {
            let at = buf.add(t * 16 * V);
            let mut acc = [_mm512_setzero_ps(); V];
            for (k, &off) in taps.iter().enumerate() {
                let f = _mm512_set1_ps(*w.add(k));
                for (v, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_fmadd_ps(f, _mm512_loadu_ps(at.add(off + 16 * v)), *a);
                }
            }
            for (v, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(o.as_mut_ptr().add(16 * v), *a);
            }
        }
    }
}

/// The AVX2 forms: tiles of `A` vectors of 8 positions (`by_unit!` says which `A`).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX2 must be available; `buf` readable at `off + q + i` for `off` in `taps`,
    /// `q + i < out.len()`; `out.len()` a multiple of `8 * A`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn max_tiles<const A: usize>(buf: *const f32, taps: &[usize], out: &mut [f32]) {
        for (t, o) in out.chunks_exact_mut(8 * A).enumerate() {
            let at = buf.add(t * 8 * A);
            let mut best = [_mm256_set1_ps(f32::NEG_INFINITY); A];
            for &off in taps {
                for (v, b) in best.iter_mut().enumerate() {
                    // As on AVX-512: the tap wins only when strictly greater.
                    *b = _mm256_max_ps(_mm256_loadu_ps(at.add(off + 8 * v)), *b);
                }
            }
            for (v, b) in best.iter().enumerate() {
                _mm256_storeu_ps(o.as_mut_ptr().add(8 * v), *b);
            }
        }
    }

    /// # Safety
    /// AVX2 and FMA must be available; `buf` readable at `off + q + i` for `off` in `taps`,
    /// `q + i < out.len()`; `w` at `..taps.len()`; `out.len()` a multiple of `8 * A`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn tiles<const A: usize>(
        buf: *const f32,
        w: *const f32,
        taps: &[usize],
        out: &mut [f32],
    ) {
        for (t, o) in out.chunks_exact_mut(8 * A).enumerate() {
            let at = buf.add(t * 8 * A);
            let mut acc = [_mm256_setzero_ps(); A];
            for (k, &off) in taps.iter().enumerate() {
                let f = _mm256_set1_ps(*w.add(k));
                for (v, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(f, _mm256_loadu_ps(at.add(off + 8 * v)), *a);
                }
            }
            for (v, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(o.as_mut_ptr().add(8 * v), *a);
            }
        }
    }
}
