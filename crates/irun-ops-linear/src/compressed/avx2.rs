//! The compressed weights' kernels in AVX2 registers: eight codes at a time turned into
//! eight f32 values without a table in memory (4-bit codes: one 32-bit load, shifted per
//! lane; a 16-entry table as two in-register permutes; 8-bit codes widened), then
//! `(value - zero_point)` multiplied into the input (matrix times vector) or by the scale
//! (decoded rows). Each output is one fixed sequence of operations, whatever the task split.
//!
//! Callers check [`usable`] first: AVX2 and FMA present (`simd::unit()`), groups of whole
//! vectors of eight, rows that start on whole bytes.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::{CompressedWeights, Decode};

/// Whether these kernels serve `w` on this CPU.
pub fn usable(w: &CompressedWeights) -> bool {
    crate::simd::unit() != crate::simd::Unit::Baseline
        && w.group.is_multiple_of(8)
        && w.cols.is_multiple_of(2)
}

/// How far ahead of the codes being decoded the kernels ask for the cache line (a decode
/// step 10% faster on the 106M INT4 Llama, alternating binaries: the hardware prefetcher
/// alone left the loads waiting).
const PREFETCH_AHEAD: usize = 1024;

/// The most input rows [`dot_rows`] multiplies at once.
pub const MAX_ROWS: usize = 4;

/// The decodings as constants, so that each kernel is compiled for one (the match below
/// then costs nothing inside the loops).
const U4: u8 = 0;
const LUT16: u8 = 1;
const U8: u8 = 2;
const I8: u8 = 3;
const LUT256: u8 = 4;

fn kind(d: Decode) -> u8 {
    match d {
        Decode::U4 => U4,
        Decode::Lut16 => LUT16,
        Decode::U8 => U8,
        Decode::I8 => I8,
        Decode::Lut256 => LUT256,
    }
}

/// `$body` with `$K` the constant of `$w`'s decoding, so that each kernel is instantiated
/// once per decoding and the one match is here.
macro_rules! by_decoding {
    ($w:expr, $K:ident => $body:expr) => {
        match kind($w.decode) {
            U4 => {
                const $K: u8 = U4;
                $body
            }
            LUT16 => {
                const $K: u8 = LUT16;
                $body
            }
            U8 => {
                const $K: u8 = U8;
                $body
            }
            I8 => {
                const $K: u8 = I8;
                $body
            }
            _ => {
                const $K: u8 = LUT256;
                $body
            }
        }
    };
}

/// Bytes of eight codes.
const fn step_bytes(kind: u8) -> usize {
    if kind <= LUT16 {
        4
    } else {
        8
    }
}

/// Eight codes at `p` as f32 values.
///
/// # Safety
/// AVX2 and FMA are present; `p` points at [`step_bytes`] readable bytes; `lut` points at
/// 256 floats for [`LUT256`].
#[inline(always)]
unsafe fn decode8<const KIND: u8>(
    p: *const u8,
    luts: &(__m256, __m256),
    lut: *const f32,
) -> __m256 {
    unsafe {
        if KIND <= LUT16 {
            let word = _mm256_set1_epi32((p as *const i32).read_unaligned());
            // Element 2j is byte j's low nibble: bits 8j..8j+4 of the word.
            let shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
            let n = _mm256_and_si256(_mm256_srlv_epi32(word, shifts), _mm256_set1_epi32(15));
            if KIND == U4 {
                _mm256_cvtepi32_ps(n)
            } else {
                let lo = _mm256_permutevar8x32_ps(luts.0, n);
                let hi = _mm256_permutevar8x32_ps(luts.1, n);
                // Bit 3 of the code moved to the sign bit picks the table's upper half.
                _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(n, 28)))
            }
        } else {
            let bytes = _mm_loadl_epi64(p as *const __m128i);
            match KIND {
                U8 => _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)),
                I8 => _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)),
                _ => _mm256_i32gather_ps::<4>(lut, _mm256_cvtepu8_epi32(bytes)),
            }
        }
    }
}

/// Asserts that row `r` of the codes lies inside them, and gives a pointer to its start.
fn row_start(w: &CompressedWeights, r: usize) -> *const u8 {
    assert!(r < w.rows && usable(w));
    let first = r * w.cols;
    let (start, len) = match w.decode {
        Decode::U4 | Decode::Lut16 => (first / 2, w.cols / 2),
        _ => (first, w.cols),
    };
    w.codes[start..start + len].as_ptr()
}

fn luts(w: &CompressedWeights) -> (__m256, __m256) {
    if w.decode == Decode::Lut16 {
        // SAFETY: the table has 16 entries (checked by `CompressedWeights::new`); unaligned
        // loads of eight floats from offsets 0 and 8.
        unsafe {
            (
                _mm256_loadu_ps(w.lut.as_ptr()),
                _mm256_loadu_ps(w.lut.as_ptr().add(8)),
            )
        }
    } else {
        // SAFETY: no memory is read.
        unsafe { (_mm256_setzero_ps(), _mm256_setzero_ps()) }
    }
}

#[inline(always)]
unsafe fn hsum(v: __m256) -> f32 {
    unsafe {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
        _mm_cvtss_f32(s)
    }
}

/// Per input row and group, the sum of the row's values in the group: with a zero point,
/// `Σ (value - zero_point) · x` is computed as `Σ value · x - zero_point · Σ x`, which saves
/// a subtraction per eight weights (the decoding's cost is the kernel's cost).
pub fn group_sums(w: &CompressedWeights, xs: &[f32]) -> Vec<f32> {
    if w.zero_points.is_none() || w.cols == 0 {
        return Vec::new();
    }
    xs.chunks_exact(w.group).map(|g| g.iter().sum()).collect()
}

/// `out[m] = x_m · w_r` for weight row `r` and the `out.len()` (at most [`MAX_ROWS`])
/// input rows `xs` (`sums` their [`group_sums`]): per group, `Σ value · x` in eight lanes,
/// less `zero_point · Σ x`, times the scale into eight running sums, added across at the
/// end.
pub fn dot_rows(w: &CompressedWeights, r: usize, xs: &[f32], sums: &[f32], out: &mut [f32]) {
    let p = row_start(w, r);
    assert!(out.len() <= MAX_ROWS && xs.len() == out.len() * w.cols);
    assert!(w.zero_points.is_none() || sums.len() == out.len() * (w.cols / w.group));
    // SAFETY: `usable` found AVX2 and FMA; `row_start` checked that the row's codes
    // (`cols / 8` steps of `step_bytes`) lie inside `codes`; the x loads are 8 floats at
    // `m * cols + c` with `c + 8 <= cols`, inside `xs` (asserted).
    by_decoding!(w, K => unsafe {
        match out.len() {
            1 => dot_rows_avx2::<1, 4, K>(w, r, p, xs, sums, out),
            2 => dot_rows_avx2::<2, 2, K>(w, r, p, xs, sums, out),
            3 => dot_rows_avx2::<3, 1, K>(w, r, p, xs, sums, out),
            _ => dot_rows_avx2::<4, 1, K>(w, r, p, xs, sums, out),
        }
    })
}

/// `U`: independent chains of multiply-adds per input row (four for one row, the decode
/// step; two for two; three and four rows are chains enough).
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_rows_avx2<const R: usize, const U: usize, const KIND: u8>(
    w: &CompressedWeights,
    r: usize,
    mut p: *const u8,
    xs: &[f32],
    x_sums: &[f32],
    out: &mut [f32],
) {
    unsafe {
        let (k, g) = (w.cols, w.group);
        let groups = k / g;
        let luts = luts(w);
        let lut = w.lut.as_ptr();
        let x = xs.as_ptr();
        let mut sums = [_mm256_setzero_ps(); R];
        let mut offsets = [0f32; R];
        for gi in 0..groups {
            let s = w.scales[r * groups + gi];
            // The codes a few groups on (a hint: never dereferenced, never faults).
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD) as *const i8);
            // `U` chains per input row, step `j` of the group into chain `j % U`: one chain
            // made a single input row (a decode step) wait out the multiply-add's latency at
            // every step. The chains are added pairwise at the group's end.
            let mut chains = [[_mm256_setzero_ps(); U]; R];
            let end = (gi + 1) * g;
            let mut c = gi * g;
            while c + 8 * U <= end {
                for u in 0..U {
                    let v = decode8::<KIND>(p, &luts, lut);
                    for (m, a) in chains.iter_mut().enumerate() {
                        a[u] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x.add(m * k + c)), a[u]);
                    }
                    p = p.add(step_bytes(KIND));
                    c += 8;
                }
            }
            while c < end {
                let v = decode8::<KIND>(p, &luts, lut);
                for (m, a) in chains.iter_mut().enumerate() {
                    a[0] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x.add(m * k + c)), a[0]);
                }
                p = p.add(step_bytes(KIND));
                c += 8;
            }
            let acc: [__m256; R] = std::array::from_fn(|m| {
                let a = &chains[m];
                match U {
                    4 => _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])),
                    2 => _mm256_add_ps(a[0], a[1]),
                    _ => a[0],
                }
            });
            let scale = _mm256_set1_ps(s);
            for m in 0..R {
                sums[m] = _mm256_fmadd_ps(scale, acc[m], sums[m]);
            }
            if let Some(z) = &w.zero_points {
                let sz = s * z[r * groups + gi];
                for (m, o) in offsets.iter_mut().enumerate() {
                    *o = sz.mul_add(x_sums[m * groups + gi], *o);
                }
            }
        }
        for (m, o) in out.iter_mut().enumerate() {
            *o = hsum(sums[m]) - offsets[m];
        }
    }
}

/// The most input rows [`weighted_rows`] multiplies at once.
pub const MAX_WEIGHTED_ROWS: usize = 8;

/// `out[m] = x_m · w_r` for up to [`MAX_WEIGHTED_ROWS`] input rows, each weight decoded once
/// to `(value - zero_point) * scale` (the f32 weight itself, as [`decode_row`] gives it) and
/// multiplied into every row's eight running sums: for prompts, where one decoding serves
/// several rows and the weight's scale costs less than keeping per-group sums for each.
pub fn weighted_rows(w: &CompressedWeights, r: usize, xs: &[f32], out: &mut [f32]) {
    let p = row_start(w, r);
    assert!(out.len() <= MAX_WEIGHTED_ROWS && xs.len() == out.len() * w.cols);
    // SAFETY: as `dot_rows`.
    by_decoding!(w, K => unsafe {
        match out.len() {
            1 => weighted_rows_avx2::<1, K>(w, r, p, xs, out),
            2 => weighted_rows_avx2::<2, K>(w, r, p, xs, out),
            3 => weighted_rows_avx2::<3, K>(w, r, p, xs, out),
            4 => weighted_rows_avx2::<4, K>(w, r, p, xs, out),
            5 => weighted_rows_avx2::<5, K>(w, r, p, xs, out),
            6 => weighted_rows_avx2::<6, K>(w, r, p, xs, out),
            7 => weighted_rows_avx2::<7, K>(w, r, p, xs, out),
            _ => weighted_rows_avx2::<8, K>(w, r, p, xs, out),
        }
    })
}

#[target_feature(enable = "avx2,fma")]
unsafe fn weighted_rows_avx2<const R: usize, const KIND: u8>(
    w: &CompressedWeights,
    r: usize,
    mut p: *const u8,
    xs: &[f32],
    out: &mut [f32],
) {
    unsafe {
        let (k, g) = (w.cols, w.group);
        let groups = k / g;
        let luts = luts(w);
        let lut = w.lut.as_ptr();
        let x = xs.as_ptr();
        let mut sums = [_mm256_setzero_ps(); R];
        for gi in 0..groups {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD) as *const i8);
            let scale = _mm256_set1_ps(w.scales[r * groups + gi]);
            let zero = w
                .zero_points
                .as_ref()
                .map(|z| _mm256_set1_ps(z[r * groups + gi]));
            let mut c = gi * g;
            while c < (gi + 1) * g {
                let mut v = decode8::<KIND>(p, &luts, lut);
                if let Some(zero) = zero {
                    v = _mm256_sub_ps(v, zero);
                }
                let v = _mm256_mul_ps(v, scale);
                for (m, sum) in sums.iter_mut().enumerate() {
                    *sum = _mm256_fmadd_ps(v, _mm256_loadu_ps(x.add(m * k + c)), *sum);
                }
                p = p.add(step_bytes(KIND));
                c += 8;
            }
        }
        for (m, o) in out.iter_mut().enumerate() {
            *o = hsum(sums[m]);
        }
    }
}

/// Row `r`'s weights, `(value - zero_point) * scale`, into `out` (`cols` values).
pub fn decode_row(w: &CompressedWeights, r: usize, out: &mut [f32]) {
    let p = row_start(w, r);
    assert!(out.len() >= w.cols);
    // SAFETY: as `dot_rows`; the stores are 8 floats at `c`, `c + 8 <= cols <= out.len()`.
    unsafe { by_decoding!(w, K => decode_row_avx2::<K>(w, r, p, out)) }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn decode_row_avx2<const KIND: u8>(
    w: &CompressedWeights,
    r: usize,
    mut p: *const u8,
    out: &mut [f32],
) {
    unsafe {
        let (k, g) = (w.cols, w.group);
        let groups = k / g;
        let luts = luts(w);
        let lut = w.lut.as_ptr();
        let o = out.as_mut_ptr();
        for gi in 0..groups {
            let scale = _mm256_set1_ps(w.scales[r * groups + gi]);
            let zero = w
                .zero_points
                .as_ref()
                .map(|z| _mm256_set1_ps(z[r * groups + gi]));
            let mut c = gi * g;
            while c < (gi + 1) * g {
                let mut v = decode8::<KIND>(p, &luts, lut);
                if let Some(zero) = zero {
                    v = _mm256_sub_ps(v, zero);
                }
                _mm256_storeu_ps(o.add(c), _mm256_mul_ps(v, scale));
                p = p.add(step_bytes(KIND));
                c += 8;
            }
        }
    }
}
