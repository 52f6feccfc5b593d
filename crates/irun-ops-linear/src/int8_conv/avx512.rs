//! A block's outputs on AVX-512 VNNI: for each tap and channel group, one load of 16
//! positions' words per vector and one broadcast weight word per output channel, and
//! `vpdpbusd` adds the four u8 x i8 products of each lane into its i32 accumulator (exact:
//! `Int8Conv::new` bounds the window so no sum overflows), then each sum converted to its
//! output in the registers.

use super::channel_lanes::{ChannelScales, CHANNELS, MAX_POSITIONS};
use super::layout::{BlockScales, Geometry, LANES, MAX_SPAN};
use super::{ActivationLevels, CO_BLOCK};

/// Whether the CPU has AVX-512 F, BW, VL and VNNI.
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`super::layout::block_scalar`], vectorised.
///
/// # Safety
/// AVX-512 F, BW and VNNI must be available ([`available`]); `words` must hold every word the
/// block reads: `grp * g.group_stride + tap + p + i` for each group, tap and `i < g.span()`
/// (the geometry's planes are sized for `p + span <= g.positions`); `weights` must hold
/// `g.taps.len() * g.groups * CO_BLOCK` words.
pub(super) unsafe fn block(
    words: &[u32],
    p: usize,
    g: &Geometry,
    weights: &[i32],
    scales: &BlockScales,
    out: &mut [[f32; MAX_SPAN]; CO_BLOCK],
) {
    debug_assert!(p + g.span() <= g.positions);
    debug_assert!(weights.len() >= g.taps.len() * g.groups * CO_BLOCK);
    debug_assert!(g
        .taps
        .iter()
        .all(|&t| (g.groups - 1) * g.group_stride + t + p + g.span() <= words.len()));
    #[cfg(target_arch = "x86_64")]
    match g.vectors {
        1 => vnni::block::<1>(words, p, g, weights, scales, out),
        2 => vnni::block::<2>(words, p, g, weights, scales, out),
        _ => vnni::block::<3>(words, p, g, weights, scales, out),
    }
    #[cfg(not(target_arch = "x86_64"))]
    super::layout::block_scalar(words, p, g, weights, scales, out)
}

/// [`super::layout::pack_words`] on AVX-512: the same f32 operations (subtract, divide,
/// multiply, round half to even), 16 positions at a time, the last vector masked.
///
/// # Safety
/// AVX-512 F must be available; every row must hold `dst.len()` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pack_words<const N: usize>(
    levels: &ActivationLevels,
    rows: [&[f32]; N],
    rest: u32,
    dst: &mut [u32],
) -> bool {
    use std::arch::x86_64::*;
    let n = dst.len();
    debug_assert!(rows.iter().all(|r| r.len() >= n));
    let range = LevelRange::new(
        levels.input_low,
        levels.input_high,
        (levels.levels - 1) as f32,
    );
    let mut nan: __mmask16 = 0;
    let mut x = 0;
    while x < n {
        // The last vector is partial: its lanes past `n` neither load nor store.
        let lanes = first_lanes(n - x);
        let mut word = _mm512_set1_epi32(rest as i32);
        for (c, row) in rows.iter().enumerate() {
            // Lanes `x..min(x + 16, n)`, and `n <= row.len()`.
            let v = _mm512_maskz_loadu_ps(lanes, row.as_ptr().add(x));
            let (k, unordered) = range.levels(v);
            nan |= unordered & lanes;
            word = _mm512_or_si512(word, _mm512_sllv_epi32(k, _mm512_set1_epi32(8 * c as i32)));
        }
        _mm512_mask_storeu_epi32(dst.as_mut_ptr().add(x).cast(), lanes, word);
        x += LANES;
    }
    nan != 0
}

/// The mask of the first `count` of 16 lanes (all of them from 16 on).
#[cfg(target_arch = "x86_64")]
fn first_lanes(count: usize) -> std::arch::x86_64::__mmask16 {
    if count >= LANES {
        !0
    } else {
        (1u16 << count) - 1
    }
}

/// A FakeQuantize's input range as vectors, for the level of 16 values at a time. The
/// range must be in order (`low < high`), as every range the kernels take is.
#[cfg(target_arch = "x86_64")]
pub(super) struct LevelRange {
    low: std::arch::x86_64::__m512,
    high: std::arch::x86_64::__m512,
    width: std::arch::x86_64::__m512,
    last: std::arch::x86_64::__m512,
    /// Whether `high - low` is finite, so that the level can be clamped ([`Self::levels`]).
    finite_width: bool,
}

#[cfg(target_arch = "x86_64")]
impl LevelRange {
    /// # Safety
    /// AVX-512 F must be available.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn new(low: f32, high: f32, last: f32) -> LevelRange {
        use std::arch::x86_64::*;
        debug_assert!(low < high);
        LevelRange {
            low: _mm512_set1_ps(low),
            high: _mm512_set1_ps(high),
            width: _mm512_set1_ps(high - low),
            last: _mm512_set1_ps(last),
            finite_width: (high - low).is_finite(),
        }
    }

    /// The level of each lane of `v` by the op's f32 steps (0 at or below the range, the
    /// last above it, `round_half_even((v - low) / (high - low) * last)` inside; 0 for NaN),
    /// and the lanes that are NaN.
    ///
    /// With a finite width the tests against the ends are a clamp of the rounded level to
    /// `0..=last`: each step rounds monotonically, so `v <= low` gives `(v - low) <= 0` and a
    /// level at most 0, and `v > high` gives `(v - low) >= width`, a quotient at least 1 and
    /// a level at least `last`; inside, the level is in `0..=last` already. A NaN level
    /// (NaN `v`) becomes 0 through `max`, which returns its second operand for NaN. Two
    /// instructions instead of five on this pass's critical path.
    ///
    /// # Safety
    /// AVX-512 F must be available.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn levels(
        &self,
        v: std::arch::x86_64::__m512,
    ) -> (std::arch::x86_64::__m512i, std::arch::x86_64::__mmask16) {
        use std::arch::x86_64::*;
        let zero = _mm512_setzero_ps();
        let t = _mm512_mul_ps(
            _mm512_div_ps(_mm512_sub_ps(v, self.low), self.width),
            self.last,
        );
        let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
        let unordered = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        let t = if self.finite_width {
            _mm512_min_ps(_mm512_max_ps(t, zero), self.last)
        } else {
            // An infinite width makes `(v - low) / width` NaN for an infinite `v - low`.
            let t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_LE_OQ>(v, self.low), zero);
            let t =
                _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, self.high), self.last);
            _mm512_mask_mov_ps(t, unordered, zero)
        };
        (_mm512_cvttps_epi32(t), unordered)
    }
}

/// [`super::channel_lanes::block_scalar`], vectorised.
///
/// # Safety
/// AVX-512 F, BW and VNNI must be available; `8 <= flat.len() <= 12`; `words` must hold
/// `grp * g.group_stride + tap + flat[j]` for every group, tap and position; `weights` must
/// hold `g.taps.len() * g.groups * 32` words.
pub(super) unsafe fn channel_block(
    words: &[u32],
    flat: &[usize],
    g: &Geometry,
    weights: &[i32],
    scales: &ChannelScales,
    out: &mut [[f32; CHANNELS]; MAX_POSITIONS],
) {
    debug_assert!(weights.len() >= g.taps.len() * g.groups * CHANNELS);
    debug_assert!(flat.iter().all(|&f| g
        .taps
        .iter()
        .all(|&t| (g.groups - 1) * g.group_stride + t + f < words.len())));
    #[cfg(target_arch = "x86_64")]
    match flat.len() {
        8 => vnni::channel_block::<8>(words, flat, g, weights, scales, out),
        9 => vnni::channel_block::<9>(words, flat, g, weights, scales, out),
        10 => vnni::channel_block::<10>(words, flat, g, weights, scales, out),
        11 => vnni::channel_block::<11>(words, flat, g, weights, scales, out),
        _ => vnni::channel_block::<12>(words, flat, g, weights, scales, out),
    }
    #[cfg(not(target_arch = "x86_64"))]
    super::channel_lanes::block_scalar(words, flat, g, weights, scales, out)
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::*;

    /// `V` vectors of 16 positions by `CO_BLOCK` output channels, all in registers.
    ///
    /// # Safety
    /// As [`super::block`], with `V == g.vectors`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
    pub(super) unsafe fn block<const V: usize>(
        words: &[u32],
        p: usize,
        g: &Geometry,
        weights: &[i32],
        scales: &BlockScales,
        out: &mut [[f32; MAX_SPAN]; CO_BLOCK],
    ) {
        let mut acc = [[_mm512_setzero_si512(); CO_BLOCK]; V];
        let mut w = weights.as_ptr();
        for &tap in &g.taps {
            // Every read below is at `grp * group_stride + tap + p + v * 16 + (0..16)` with
            // `v < V`, inside `words` by the caller's contract.
            let mut at = words.as_ptr().add(tap + p);
            for _ in 0..g.groups {
                let x: [__m512i; V] =
                    std::array::from_fn(|v| _mm512_loadu_si512(at.add(v * LANES).cast()));
                for lane in 0..CO_BLOCK {
                    let code = _mm512_set1_epi32(*w.add(lane));
                    for v in 0..V {
                        acc[v][lane] = _mm512_dpbusd_epi32(acc[v][lane], x[v], code);
                    }
                }
                w = w.add(CO_BLOCK);
                at = at.add(g.group_stride);
            }
        }
        // `(sum - zero_sum) as f32 * scale`: the conversion rounds to nearest as `as f32`.
        for (lane, row) in out.iter_mut().enumerate() {
            let zero_sum = _mm512_set1_epi32(scales.zero_sums[lane]);
            let scale = _mm512_set1_ps(scales.scales[lane]);
            for (v, a) in acc.iter().enumerate() {
                let y = _mm512_mul_ps(
                    _mm512_cvtepi32_ps(_mm512_sub_epi32(a[lane], zero_sum)),
                    scale,
                );
                _mm512_storeu_ps(row.as_mut_ptr().add(v * LANES), y);
            }
        }
    }

    /// `P` positions by 32 output channels, all in registers.
    ///
    /// # Safety
    /// As [`super::channel_block`], with `P == flat.len()`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
    pub(super) unsafe fn channel_block<const P: usize>(
        words: &[u32],
        flat: &[usize],
        g: &Geometry,
        weights: &[i32],
        scales: &ChannelScales,
        out: &mut [[f32; CHANNELS]; MAX_POSITIONS],
    ) {
        let mut acc = [[_mm512_setzero_si512(); 2]; P];
        let at: [*const u32; P] = std::array::from_fn(|j| words.as_ptr().add(flat[j]));
        let mut w = weights.as_ptr();
        for &tap in &g.taps {
            let mut offset = tap;
            for _ in 0..g.groups {
                // Reads `grp * group_stride + tap + flat[j]`, inside `words` by the
                // caller's contract, and 32 weight words of the block.
                let low = _mm512_loadu_si512(w.cast());
                let high = _mm512_loadu_si512(w.add(16).cast());
                for j in 0..P {
                    let x = _mm512_set1_epi32(*at[j].add(offset) as i32);
                    acc[j][0] = _mm512_dpbusd_epi32(acc[j][0], x, low);
                    acc[j][1] = _mm512_dpbusd_epi32(acc[j][1], x, high);
                }
                w = w.add(CHANNELS);
                offset += g.group_stride;
            }
        }
        for half in 0..2 {
            let zero_sum = _mm512_loadu_si512(scales.zero_sums.as_ptr().add(half * 16).cast());
            let scale = _mm512_loadu_ps(scales.scales.as_ptr().add(half * 16));
            for j in 0..P {
                let y = _mm512_mul_ps(
                    _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[j][half], zero_sum)),
                    scale,
                );
                _mm512_storeu_ps(out[j].as_mut_ptr().add(half * 16), y);
            }
        }
    }
}
