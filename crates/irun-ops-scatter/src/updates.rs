//! Where a kernel reads its updates: stored as the type it computes in, or narrower and
//! widened a block at a time as the kernel reaches them.
//!
//! f16 and bf16 reductions compute in f32 (rounded once per element at the end, as
//! OpenVINO's reference does). Widened whole first, 16M f16 updates became 64 MB of f32
//! written to memory and read back, a sixth of a 16M f16 sum's thread time; widened by the
//! block that reads them, they stay in L1.

use irun_opkit::halves::Half;

use crate::reduce::Elem;

/// The updates of a scatter, by position.
pub trait Updates<T: Elem>: Sync {
    /// Updates `start..start + n` as `T`: borrowed when stored as `T`, else widened into
    /// `buf` (grown as needed).
    fn block<'s>(&'s self, start: usize, n: usize, buf: &'s mut Vec<T>) -> &'s [T];
}

impl<T: Elem> Updates<T> for [T] {
    #[inline(always)]
    fn block<'s>(&'s self, start: usize, n: usize, _buf: &'s mut Vec<T>) -> &'s [T] {
        &self[start..start + n]
    }
}

/// f16 or bf16 updates read as f32 (the only type the reductions compute them in; any other
/// `T` would get each value through f32).
pub struct Widening<'a, H>(pub &'a [H]);

/// Values a [`Widening`] converts at a time, on the stack.
const WIDEN_BLOCK: usize = 1024;

impl<T: Elem, H: Half> Updates<T> for Widening<'_, H> {
    fn block<'s>(&'s self, start: usize, n: usize, buf: &'s mut Vec<T>) -> &'s [T] {
        buf.clear();
        let mut wide = [0f32; WIDEN_BLOCK];
        for src in self.0[start..start + n].chunks(WIDEN_BLOCK) {
            let wide = &mut wide[..src.len()];
            // One vector conversion per chunk: per value, the conversions were 29% of an
            // f16 sum's samples. For f32 the map below is a copy within L1.
            H::widen_into(src, wide);
            buf.extend(wide.iter().map(|&v| T::from_f32(v)));
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// Blocks of any length and start come back as the per-value conversion, for both
    /// half types, as f32 and through f32 as another type.
    #[test]
    fn widening_blocks_match_the_per_value_conversion() {
        // Every bit pattern, NaNs and subnormals included, in a scrambled order.
        let bits: Vec<u16> = (0..=u16::MAX).map(|i| i.wrapping_mul(40503)).collect();
        let halves: Vec<f16> = bits.iter().map(|&b| f16::from_bits(b)).collect();
        let brains: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
        let (narrow, brain) = (Widening(&halves[..]), Widening(&brains[..]));
        let mut buf = Vec::new();
        for (start, n) in [
            (0, 0),
            (0, 1),
            (3, 1024),
            (1000, 1025),
            (17, 4096),
            (4999, 1),
        ] {
            let got: &[f32] = narrow.block(start, n, &mut buf);
            let want: Vec<f32> = halves[start..start + n]
                .iter()
                .map(|h| h.to_f32())
                .collect();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let first_diff =
                |a: &[f32], b: &[f32]| bits(a).iter().zip(bits(b)).position(|(x, y)| *x != y);
            assert_eq!(got.len(), n);
            assert_eq!(first_diff(got, &want), None, "f16 block at {start}, {n}");
            let got: &[f32] = brain.block(start, n, &mut buf);
            let want: Vec<f32> = brains[start..start + n]
                .iter()
                .map(|h| h.to_f32())
                .collect();
            assert_eq!(first_diff(got, &want), None, "bf16 block at {start}, {n}");
            let mut wide = Vec::new();
            let got: &[f64] = narrow.block(start, n, &mut wide);
            assert!(got
                .iter()
                .zip(&halves[start..])
                .all(|(&g, h)| g.to_bits() == f64::from(h.to_f32()).to_bits()));
        }
        let mut unused = Vec::new();
        let same: &[i32] = [5, 6, 7][..].block(1, 2, &mut unused);
        assert_eq!(same, &[6, 7]);
    }
}
