//! f16 and bf16 slices to and from f32, in parallel blocks through vector conversions: F16C
//! where the CPU has it (one instruction per eight values where the per-value path makes a
//! call per value: 10x, for the f16-compressed weights of a ResNet; a fifth of an f16
//! scatter-add's time), a shift for bf16, `half`'s slice conversions otherwise.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::op::OpError;
use crate::par;
use crate::stream::STREAM_MIN_BYTES;

/// Values per block: the f32 side stays in L1 between the conversion and the copy.
const BLOCK: usize = 1024;

/// A 16-bit float that widens to f32 exactly, a slice at a time, with the bits of the
/// per-value conversion (`Into<f32>`; signalling NaNs come back quiet).
pub trait Half: Copy + Send + Sync + Into<f32> {
    /// `dst[i]` = `src[i]` as f32; the slices have one length.
    fn widen_into(src: &[Self], dst: &mut [f32]);
}

impl Half for f16 {
    #[inline]
    fn widen_into(src: &[Self], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "widening keeps the length");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
        {
            // SAFETY: the CPU has F16C and AVX, just checked.
            unsafe { widen_f16c(src, dst) };
            return;
        }
        src.convert_to_f32_slice(dst);
    }
}

/// f16 to f32 eight at a time, in a loop the compiler keeps whole: `half`'s slice
/// conversion calls a function per eight values, a tenth of a 16M f16 sum's thread time
/// when a scatter widened its updates block by block. The same instruction as `half`'s, so
/// the same bits.
///
/// How many values ahead `widen_f16c` asks for its source. A scatter widens its f16
/// updates a block at a time between stretches of random read-modify-writes, which leave
/// the hardware's stream prefetch behind: 16M f16 updates summed onto 1M elements with
/// half of them on 8 hot targets, 2 threads (Zen 4), 17.87 to 16.67 ms; uniform targets
/// 20.68 to 19.61 (medians of 4 alternating runs; 256, 1024 and 2048 no better). A
/// reader that asks for blocks of this many values gets each block's prefetch to cover the
/// next block, which its loop over this one gives time to arrive.
pub const WIDEN_AHEAD: usize = 512;

/// # Safety
/// The CPU has F16C and AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn widen_f16c(src: &[f16], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let (mut s, mut d) = (src.chunks_exact(8), dst.chunks_exact_mut(8));
    for (s8, d8) in (&mut s).zip(&mut d) {
        crate::simd::prefetch_read_ptr(s8.as_ptr().wrapping_add(WIDEN_AHEAD));
        // SAFETY: `s8` is 8 f16 (16 bytes) and `d8` 8 f32 (32 bytes); both accesses are
        // unaligned ones; the caller's contract gives the features.
        unsafe {
            let h = _mm_loadu_si128(s8.as_ptr().cast::<__m128i>());
            _mm256_storeu_ps(d8.as_mut_ptr(), _mm256_cvtph_ps(h));
        }
    }
    for (x, y) in s.remainder().iter().zip(d.into_remainder()) {
        *y = x.to_f32();
    }
}

impl Half for bf16 {
    /// A bf16 is the top half of its f32: a shift, which the compiler vectorises, and a
    /// signalling NaN quieted, as the per-value conversion does.
    #[inline]
    fn widen_into(src: &[Self], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "widening keeps the length");
        for (x, y) in src.iter().zip(dst) {
            let bits = u32::from(x.to_bits()) << 16;
            let nan = (bits & 0x7fff_ffff) > 0x7f80_0000;
            *y = f32::from_bits(bits | (u32::from(nan) << 22));
        }
    }
}

/// `v` widened to f32 (exact). Outputs of [`STREAM_MIN_BYTES`] or more are written with
/// streaming stores: a 64 MB widening of f16 data for a ScatterNDUpdate sum onto `[1M,16]`
/// leaves the cache before the scatter reads it (2 threads, Zen 4: 24.35 to 22.60 ms,
/// medians of 5 alternating runs).
pub fn widen<H: Half>(v: &[H]) -> Result<Vec<f32>, OpError> {
    let stream = std::mem::size_of_val(v) * 2 >= STREAM_MIN_BYTES;
    par::build(v.len(), 1 << 14, &|start, fill| {
        let mut block = [0f32; BLOCK];
        let mut at = start;
        while fill.remaining() > 0 {
            let n = fill.remaining().min(BLOCK);
            H::widen_into(&v[at..at + n], &mut block[..n]);
            match stream {
                true => fill.stream_from_slice(&block[..n]),
                false => fill.extend_from_slice(&block[..n]),
            }
            at += n;
        }
    })
}

/// `wide` rounded to `H` to nearest-even (as [`narrow_into`]), in a new vector: for an
/// output that need not start as a copy of anything.
pub fn narrow<H>(wide: &[f32]) -> Result<Vec<H>, OpError>
where
    H: Copy + Send + Default,
    [H]: HalfFloatSliceExt,
{
    par::build(wide.len(), 1 << 14, &|start, fill| {
        let mut block = [H::default(); BLOCK];
        let mut at = start;
        while fill.remaining() > 0 {
            let n = fill.remaining().min(BLOCK);
            block[..n].convert_from_f32_slice(&wide[at..at + n]);
            fill.extend_from_slice(&block[..n]);
            at += n;
        }
    })
}

/// `out[i]` = `wide[i]` rounded to nearest-even (the same as the per-value `from_f32`),
/// `out` and `wide` of one length.
pub fn narrow_into<H>(out: &mut [H], wide: &[f32])
where
    H: Send,
    [H]: HalfFloatSliceExt,
{
    assert_eq!(out.len(), wide.len(), "narrowing keeps the length");
    par::for_each_split_mut(out, 1 << 14, &|start, d| {
        for (k, d) in d.chunks_mut(BLOCK).enumerate() {
            let from = start + k * BLOCK;
            d.convert_from_f32_slice(&wide[from..from + d.len()]);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// Both directions agree with the per-value conversions `to_f32` and `from_f32` on
    /// every 16-bit pattern (NaNs included), and on f32 probes between and beyond the
    /// halves (rounding, overflow, subnormals, NaNs), across several blocks and a partial one;
    /// `narrow` into a new vector as `narrow_into` does.
    fn matches_per_value<H>(from_bits: fn(u16) -> H, to_bits: fn(H) -> u16, from_f32: fn(f32) -> H)
    where
        H: Half + Default,
        [H]: HalfFloatSliceExt,
    {
        let halves: Vec<H> = (0..=u16::MAX).map(from_bits).collect();
        let wide = widen(&halves).unwrap();
        for (&h, w) in halves.iter().zip(&wide) {
            let want: f32 = h.into();
            assert_eq!(want.to_bits(), w.to_bits(), "{:#06x}", to_bits(h));
        }
        let probes: Vec<f32> = (0..200_003u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        let mut out = vec![from_bits(0); probes.len()];
        narrow_into(&mut out, &probes);
        for (&o, &p) in out.iter().zip(&probes) {
            assert_eq!(to_bits(o), to_bits(from_f32(p)), "{:#010x}", p.to_bits());
        }
        let new: Vec<H> = narrow(&probes).unwrap();
        assert!(new
            .iter()
            .zip(&out)
            .all(|(&a, &b)| to_bits(a) == to_bits(b)));
        assert_eq!(new.len(), probes.len());
    }

    /// Past the streaming threshold, and not a whole number of blocks: the same bits.
    #[test]
    fn large_widening_streams_the_same_bits() {
        let n = STREAM_MIN_BYTES / 4 + 1001;
        let halves: Vec<f16> = (0..n)
            .map(|i| f16::from_bits((i as u16).wrapping_mul(40503)))
            .collect();
        let wide = widen(&halves).unwrap();
        assert_eq!(wide.len(), n);
        for (&h, w) in halves.iter().zip(&wide) {
            assert_eq!(h.to_f32().to_bits(), w.to_bits(), "{:#06x}", h.to_bits());
        }
    }

    #[test]
    fn slice_conversions_match_the_per_value_ones() {
        matches_per_value(f16::from_bits, f16::to_bits, f16::from_f32);
        matches_per_value(bf16::from_bits, bf16::to_bits, bf16::from_f32);
    }
}
