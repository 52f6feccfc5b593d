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

    /// Both directions agree with the per-value conversions on every f16 and bf16 bit
    /// pattern (NaNs included), across several blocks and a partial one.
    #[test]
    fn slice_conversions_match_the_per_value_ones() {
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let halves: Vec<f16> = bits.iter().map(|&b| f16::from_bits(b)).collect();
        let wide = widen(&halves).unwrap();
        for (h, w) in halves.iter().zip(&wide) {
            assert_eq!(h.to_f32().to_bits(), w.to_bits(), "{:#06x}", h.to_bits());
        }
        let brains: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
        let wide_b = widen(&brains).unwrap();
        for (h, w) in brains.iter().zip(&wide_b) {
            assert_eq!(h.to_f32().to_bits(), w.to_bits(), "{:#06x}", h.to_bits());
        }
        // f32 values between and beyond the halves: rounding, overflow, subnormals, NaNs.
        let probes: Vec<f32> = (0..200_003u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        let mut out = vec![f16::ZERO; probes.len()];
        narrow_into(&mut out, &probes);
        for (o, &p) in out.iter().zip(&probes) {
            assert_eq!(
                o.to_bits(),
                f16::from_f32(p).to_bits(),
                "{:#010x}",
                p.to_bits()
            );
        }
        let mut out_b = vec![bf16::ZERO; probes.len()];
        narrow_into(&mut out_b, &probes);
        for (o, &p) in out_b.iter().zip(&probes) {
            assert_eq!(
                o.to_bits(),
                bf16::from_f32(p).to_bits(),
                "{:#010x}",
                p.to_bits()
            );
        }
    }
}
