//! Where a kernel reads its updates: stored as the type it computes in, or narrower and
//! widened a block at a time as the kernel reaches them.
//!
//! f16 and bf16 reductions compute in f32 (rounded once per element at the end, as
//! OpenVINO's reference does). Widened whole first, 16M f16 updates became 64 MB of f32
//! written to memory and read back, a sixth of a 16M f16 sum's thread time; widened by the
//! block that reads them, they stay in L1. Flat histograms read them so on every path
//! (rounds, lean chunks, the lean pass): 16M f16 updates on 8 hot targets of 1M, one
//! thread, 24.5 to 19.0 ms.

use irun_opkit::halves::Half;

use crate::elem::Elem;

/// The updates of a scatter, by position.
pub trait Updates<T: Elem>: Sync {
    /// Updates `start..start + n` as `T`: borrowed when stored as `T`, else widened into
    /// `buf` (grown as needed).
    fn block<'s>(&'s self, start: usize, n: usize, buf: &'s mut Vec<T>) -> &'s [T];

    /// The most positions a reader should ask [`Updates::block`] for at a time: as many
    /// as it likes (its index blocks) when the updates are borrowed.
    fn block_len(&self) -> usize {
        usize::MAX
    }

    /// All the updates as `T`, where they are stored so; `None` where they are widened.
    fn whole(&self) -> Option<&[T]> {
        None
    }
}

impl<T: Elem> Updates<T> for [T] {
    #[inline(always)]
    fn block<'s>(&'s self, start: usize, n: usize, _buf: &'s mut Vec<T>) -> &'s [T] {
        &self[start..start + n]
    }

    fn whole(&self) -> Option<&[T]> {
        Some(self)
    }
}

/// f16 or bf16 updates read as f32 (the only type the reductions compute them in; any other
/// `T` would get each value through f32).
pub struct Widening<'a, H>(pub &'a [H]);

/// Positions per block a reader of a [`Widening`] asks for: as many as the widening's
/// prefetch runs ahead, so that widening one block asks for the next, which has arrived
/// by the time the reader's loop over this block is done. With blocks of 4096 the widening
/// waited on memory for most of each block, the prefetch 512 values ahead of a loop that
/// goes through them in a few hundred cycles. 16M f16 updates onto 1M elements, 2 threads
/// (Zen 4, medians of 6 alternating runs in a fast phase): half of them on 8 hot targets
/// 16.91 to 15.41 ms, skewed 17.66 to 16.66, uniform 18.85 to 17.70; sorted (5 runs) 11.65
/// to 9.92, reverse-sorted 13.40 to 11.07, all on one element 17.87 to 14.85. Blocks of
/// 256 did as well as 512, blocks of 1024 worse (hot 16.65, uniform 19.10). bf16, whose
/// widening is a shift with no prefetch of its own, gained too (hot 16.67 to 15.82 ms,
/// sorted 11.88 to 10.41); a prefetch added to it was no clear gain.
const READER_BLOCK: usize = irun_opkit::halves::WIDEN_AHEAD;

/// Values a [`Widening`] converts at a time, on the stack, when `T` is not f32.
const WIDEN_BLOCK: usize = 1024;

impl<T: Elem, H: Half> Updates<T> for Widening<'_, H> {
    fn block_len(&self) -> usize {
        READER_BLOCK
    }

    fn block<'s>(&'s self, start: usize, n: usize, buf: &'s mut Vec<T>) -> &'s [T] {
        let src = &self.0[start..start + n];
        // Every value of the block is written below: a buffer kept from the last block of
        // the same length is not cleared first (zeroing 16 KB a block of 4096 was 2% of an
        // f16 sum's time).
        buf.resize(n, T::ZERO);
        // Straight into the block when it is f32, the case that matters: through a buffer
        // on the stack and a copy, the copy's stores were a third of the widening's time.
        if let Some(wide) = as_f32(&mut buf[..]) {
            H::widen_into(src, wide);
            return buf;
        }
        let mut wide = [0f32; WIDEN_BLOCK];
        for (src, dst) in src.chunks(WIDEN_BLOCK).zip(buf.chunks_mut(WIDEN_BLOCK)) {
            let wide = &mut wide[..src.len()];
            // One vector conversion per chunk: per value, the conversions were 29% of an
            // f16 sum's samples.
            H::widen_into(src, wide);
            for (d, &v) in dst.iter_mut().zip(wide.iter()) {
                *d = T::from_f32(v);
            }
        }
        buf
    }
}

/// `s` as f32 values when `T` is f32.
fn as_f32<T: 'static>(s: &mut [T]) -> Option<&mut [f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (their type ids are equal), so this is the same slice, with the
    // same length, layout and borrow, under its own type's name.
    Some(unsafe { &mut *(s as *mut [T] as *mut [f32]) })
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
