//! f16 and bf16 slices to and from f32, in parallel blocks through `half`'s slice
//! conversions, which use the F16C instructions where the CPU has them: one vector
//! instruction per eight values where the per-value path makes a call per value (10x, for
//! the f16-compressed weights of a ResNet; a fifth of an f16 scatter-add's time).

use half::slice::HalfFloatSliceExt;

use crate::op::OpError;
use crate::par;

/// Values per block: the f32 side stays in L1 between the conversion and the copy.
const BLOCK: usize = 1024;

/// `v` widened to f32 (exact).
pub fn widen<H>(v: &[H]) -> Result<Vec<f32>, OpError>
where
    H: Sync,
    [H]: HalfFloatSliceExt,
{
    par::build(v.len(), 1 << 14, &|start, fill| {
        let mut block = [0f32; BLOCK];
        let mut at = start;
        while fill.remaining() > 0 {
            let n = fill.remaining().min(BLOCK);
            v[at..at + n].convert_to_f32_slice(&mut block[..n]);
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
    /// halves (rounding, overflow, subnormals, NaNs), across several blocks and a partial one.
    fn matches_per_value<H>(from_bits: fn(u16) -> H, to_bits: fn(H) -> u16, from_f32: fn(f32) -> H)
    where
        H: Copy + Send + Sync + Into<f32>,
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
    }

    #[test]
    fn slice_conversions_match_the_per_value_ones() {
        matches_per_value(f16::from_bits, f16::to_bits, f16::from_f32);
        matches_per_value(bf16::from_bits, bf16::to_bits, bf16::from_f32);
    }
}
