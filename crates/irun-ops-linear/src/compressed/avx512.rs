//! The decode step's product (one input row times every weight row) in AVX-512 registers,
//! sixteen codes per step and no per-lane shift:
//!
//! - 4-bit codes: sixteen bytes widened to sixteen lanes; a lane's low nibble indexes a
//!   16-entry table in one register directly (`vpermps` reads only an index's low four
//!   bits), its high nibble after one shift. The table holds each code's value less the
//!   group's zero point, so a group's sum needs no correction. The two nibbles of a byte are
//!   neighbouring columns, so the input row is read reordered ([`Input`]): in every 32
//!   columns, the even ones, then the odd ones.
//! - 8-bit codes (u8, i8): sixteen bytes widened, the zero point subtracted as an integer
//!   (exact), converted.
//!
//! The AVX2 kernels spend four vector instructions on every eight 4-bit codes (broadcast
//! word, per-lane shift, mask, convert), this one three on every sixteen: on a Zen 4 core
//! the 106M INT4 Llama's decode step went from 6.9 to 5.4 ms (one thread).
//!
//! Each output is `Σ_groups scale · Σ (value - zero_point) · x`, in one fixed order whatever
//! the rows a task takes.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::{CompressedWeights, Decode};

/// Columns per reordered block of a 4-bit row: the 32 codes of sixteen bytes.
const BLOCK: usize = 32;

/// How far ahead of the codes being read the kernel asks for the cache line (as the AVX2
/// kernels).
const PREFETCH_AHEAD: usize = 1024;

/// Whether [`dot_block`] serves `w` on this CPU: AVX-512 present, a decoding without a
/// 256-entry table (fp8 codes stay on the AVX2 gather), and groups of whole blocks.
pub fn usable(w: &CompressedWeights) -> bool {
    crate::simd::unit() == crate::simd::Unit::Avx512
        && match w.decode {
            Decode::U4 | Decode::Lut16 => w.group.is_multiple_of(BLOCK),
            Decode::U8 | Decode::I8 => w.group.is_multiple_of(16),
            Decode::Lut256 => false,
        }
}

/// One input row as [`dot_block`] reads it: for 4-bit codes, each block of 32 columns as its
/// 16 even columns then its 16 odd ones (the order of a byte's low and high nibbles).
pub struct Input(Vec<f32>);

impl Input {
    pub fn new(w: &CompressedWeights, x: &[f32]) -> Input {
        assert_eq!(x.len(), w.cols);
        match w.decode {
            Decode::U4 | Decode::Lut16 => Input(
                x.chunks(BLOCK)
                    .flat_map(|b| {
                        let evens = b.iter().step_by(2);
                        evens.chain(b.iter().skip(1).step_by(2)).copied()
                    })
                    .collect(),
            ),
            _ => Input(x.to_vec()),
        }
    }
}

/// `out[j] = x · w_(first + j)` for the weight rows `first..first + out.len()`.
pub fn dot_block(w: &CompressedWeights, first: usize, x: &Input, out: &mut [f32]) {
    assert!(usable(w) && first + out.len() <= w.rows && x.0.len() == w.cols);
    let row_bytes = match w.decode {
        Decode::U4 | Decode::Lut16 => w.cols / 2,
        _ => w.cols,
    };
    // Whole rows of whole bytes: `usable` holds, so `cols` is a whole number of groups, each
    // of whole blocks of 32 4-bit codes or 16 8-bit ones.
    let codes = &w.codes[first * row_bytes..(first + out.len()) * row_bytes];
    // SAFETY: `usable` found AVX-512 F, BW, VL and DQ. Each row reads `row_bytes` bytes from
    // its start inside `codes` (sliced above) in steps of 16, and the input in steps of 16
    // floats at column `c` with `c + 16 <= cols == x.0.len()` (asserted).
    unsafe {
        match w.decode {
            Decode::U4 | Decode::Lut16 => dot_rows::<true>(w, first, codes, &x.0, out),
            _ => dot_rows::<false>(w, first, codes, &x.0, out),
        }
    }
}

/// Four independent chains of multiply-adds: one chain would wait out the multiply-add's
/// latency at every step.
const CHAINS: usize = 4;

#[inline(always)]
unsafe fn chains_sum(a: [__m512; CHAINS]) -> __m512 {
    unsafe { _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])) }
}

/// Each row's groups: `Σ_groups scale · Σ (value - zero_point) · x`, a group's sums by
/// [`four_bit_group`] (`FOUR`) or [`eight_bit_group`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
unsafe fn dot_rows<const FOUR: bool>(
    w: &CompressedWeights,
    first: usize,
    codes: &[u8],
    x: &[f32],
    out: &mut [f32],
) {
    unsafe {
        let (k, g) = (w.cols, w.group);
        let groups = k / g;
        let group_bytes = if FOUR { g / 2 } else { g };
        let table = _mm512_loadu_ps(w.lut.as_ptr());
        let signed = w.decode == Decode::I8;
        let mut p = codes.as_ptr();
        let x = x.as_ptr();
        for (j, o) in out.iter_mut().enumerate() {
            let r = first + j;
            let mut sum = _mm512_setzero_ps();
            for gi in 0..groups {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD) as *const i8);
                let zero = w.zero_points.as_ref().map(|z| z[r * groups + gi]);
                let range = gi * g..(gi + 1) * g;
                let a = if FOUR {
                    let values = match zero {
                        Some(z) => _mm512_sub_ps(table, _mm512_set1_ps(z)),
                        None => table,
                    };
                    four_bit_group(p, x, range, values)
                } else {
                    // Zero points of 8-bit codes are whole numbers within the codes' range
                    // in every NNCF export, subtracted from the codes as integers (exact);
                    // any other is subtracted from the value as the definition does.
                    let zero = zero.unwrap_or(0.0);
                    if zero == zero.trunc() && zero.abs() <= 256.0 {
                        eight_bit_group::<false>(p, x, range, signed, zero)
                    } else {
                        eight_bit_group::<true>(p, x, range, signed, zero)
                    }
                };
                p = p.add(group_bytes);
                let scale = _mm512_set1_ps(w.scales[r * groups + gi]);
                sum = _mm512_fmadd_ps(scale, chains_sum(a), sum);
            }
            *o = _mm512_reduce_add_ps(sum);
        }
    }
}

/// The chains of `Σ value · x` over the columns `range` of one 4-bit group whose codes
/// start at `p`, `values` the table of each code's value (less the zero point).
///
/// # Safety
/// AVX-512 F present; `range.len() / 2` (a multiple of 16) bytes readable at `p`, floats
/// `range` readable at `x`.
#[inline(always)]
unsafe fn four_bit_group(
    mut p: *const u8,
    x: *const f32,
    range: std::ops::Range<usize>,
    values: __m512,
) -> [__m512; CHAINS] {
    unsafe {
        let mut a = [_mm512_setzero_ps(); CHAINS];
        let mut c = range.start;
        // Two blocks per step, one chain per half block.
        while c + 2 * BLOCK <= range.end {
            for b in 0..2 {
                let (low, high) = four_bit_block(p.add(16 * b), values);
                let (u, v) = (2 * b, 2 * b + 1);
                a[u] = _mm512_fmadd_ps(low, _mm512_loadu_ps(x.add(c)), a[u]);
                a[v] = _mm512_fmadd_ps(high, _mm512_loadu_ps(x.add(c + 16)), a[v]);
                c += BLOCK;
            }
            p = p.add(32);
        }
        if c < range.end {
            let (low, high) = four_bit_block(p, values);
            a[0] = _mm512_fmadd_ps(low, _mm512_loadu_ps(x.add(c)), a[0]);
            a[1] = _mm512_fmadd_ps(high, _mm512_loadu_ps(x.add(c + 16)), a[1]);
        }
        a
    }
}

/// The chains of `Σ (value - zero) · x` over the columns `range` of one 8-bit group whose
/// codes start at `p`; `FLOAT_ZERO`: `zero` is subtracted from the converted value, else
/// from the integer code.
///
/// # Safety
/// AVX-512 F, BW present; `range.len()` (a multiple of 16) bytes readable at `p`, floats
/// `range` readable at `x`.
#[inline(always)]
unsafe fn eight_bit_group<const FLOAT_ZERO: bool>(
    mut p: *const u8,
    x: *const f32,
    range: std::ops::Range<usize>,
    signed: bool,
    zero: f32,
) -> [__m512; CHAINS] {
    unsafe {
        let zero_int = _mm512_set1_epi32(if FLOAT_ZERO { 0 } else { zero as i32 });
        let zero_f = _mm512_set1_ps(zero);
        let decode = |p: *const u8| {
            let bytes = _mm_loadu_si128(p as *const __m128i);
            let ints = if signed {
                _mm512_cvtepi8_epi32(bytes)
            } else {
                _mm512_cvtepu8_epi32(bytes)
            };
            if FLOAT_ZERO {
                _mm512_sub_ps(_mm512_cvtepi32_ps(ints), zero_f)
            } else {
                _mm512_cvtepi32_ps(_mm512_sub_epi32(ints, zero_int))
            }
        };
        let mut a = [_mm512_setzero_ps(); CHAINS];
        let mut c = range.start;
        while c + 16 * CHAINS <= range.end {
            for a in a.iter_mut() {
                *a = _mm512_fmadd_ps(decode(p), _mm512_loadu_ps(x.add(c)), *a);
                p = p.add(16);
                c += 16;
            }
        }
        while c < range.end {
            a[0] = _mm512_fmadd_ps(decode(p), _mm512_loadu_ps(x.add(c)), a[0]);
            p = p.add(16);
            c += 16;
        }
        a
    }
}

/// The values of the 32 4-bit codes in the sixteen bytes at `p`: the low nibbles' (even
/// columns) and the high nibbles' (odd columns), through `values`, a table of sixteen.
///
/// # Safety
/// AVX-512 F present; sixteen bytes readable at `p`.
#[inline(always)]
unsafe fn four_bit_block(p: *const u8, values: __m512) -> (__m512, __m512) {
    unsafe {
        let bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(p as *const __m128i));
        // `vpermps` reads an index's low four bits only: the low nibble, as it is.
        let low = _mm512_permutexvar_ps(bytes, values);
        let high = _mm512_permutexvar_ps(_mm512_srli_epi32::<4>(bytes), values);
        (low, high)
    }
}
