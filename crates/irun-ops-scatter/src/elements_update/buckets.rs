//! The per-part, per-bucket lists of the bucketed path, reused from round to round.

use crate::op::{codes, OpError};
use crate::reduce::Elem;

/// The most target buckets of [`ElementsKernel::run_bucketed`].
pub(super) const MAX_BUCKETS: usize = 64;

/// The work lists one part of a round of [`ElementsKernel::run_bucketed`] fills: per bucket,
/// the `(output offset, update)` pairs of the part's positions that target the bucket, in
/// row-major order. The vectors only grow, and `used` says how much of each is this round's,
/// so refilling them costs no allocation and no initialisation after the first rounds.
pub(super) struct PartLists<T> {
    pub(super) lists: Vec<Vec<(u32, T)>>,
    pub(super) used: Vec<usize>,
}

impl<T: Elem> PartLists<T> {
    pub(super) fn new(buckets: usize) -> PartLists<T> {
        PartLists {
            lists: (0..buckets).map(|_| Vec::new()).collect(),
            used: vec![0; buckets],
        }
    }

    pub(super) fn bucket(&self, b: usize) -> &[(u32, T)] {
        &self.lists[b][..self.used[b]]
    }

    /// Room for `n` more pairs in every bucket, plus the one slot past the end that
    /// [`TwoLists`] writes in the bucket it does not fill.
    pub(super) fn make_room(&mut self, n: usize) -> Result<(), OpError> {
        for (list, &used) in self.lists.iter_mut().zip(&self.used) {
            if list.len() < used + n + 1 {
                let len = (used + n + 1).max(2 * list.len());
                list.try_reserve(len - list.len()).map_err(|_| {
                    OpError::new(codes::MEMORY, "cannot allocate scatter work lists")
                })?;
                list.resize(len, (0, T::ZERO));
            }
        }
        Ok(())
    }
}

/// Appends `(offset, update)` to a bucket's list, within the room [`PartLists::make_room`] made.
pub(super) trait Put<T> {
    fn put(&mut self, bucket: usize, off: u32, u: T);
}

/// The writer for two buckets: writes each pair to both lists and advances one cursor, which
/// leaves no branch to mispredict on random targets. Small enough for its cursors to live in
/// registers.
pub(super) struct TwoLists<'a, T> {
    pub(super) low: &'a mut [(u32, T)],
    pub(super) high: &'a mut [(u32, T)],
    pub(super) cursors: (usize, usize),
}

impl<T: Copy> Put<T> for TwoLists<'_, T> {
    #[inline(always)]
    fn put(&mut self, bucket: usize, off: u32, u: T) {
        let (l, h) = self.cursors;
        self.low[l] = (off, u);
        self.high[h] = (off, u);
        self.cursors = (l + 1 - bucket, h + bucket);
    }
}

/// The writer for any number of buckets, with the cursors in a local array.
pub(super) struct ManyLists<'a, T> {
    pub(super) lists: [&'a mut [(u32, T)]; MAX_BUCKETS],
    pub(super) used: [usize; MAX_BUCKETS],
    /// Where [`ManyLists::finish`] leaves the cursors.
    pub(super) counts: &'a mut [usize],
}

impl<'a, T> ManyLists<'a, T> {
    pub(super) fn new(vecs: &'a mut [Vec<(u32, T)>], counts: &'a mut [usize]) -> ManyLists<'a, T> {
        let mut lists: [&mut [(u32, T)]; MAX_BUCKETS] = std::array::from_fn(|_| &mut [][..]);
        for (slot, list) in lists.iter_mut().zip(vecs) {
            *slot = list.as_mut_slice();
        }
        let mut used = [0; MAX_BUCKETS];
        used[..counts.len()].copy_from_slice(counts);
        ManyLists {
            lists,
            used,
            counts,
        }
    }

    pub(super) fn finish(self) {
        let n = self.counts.len();
        self.counts.copy_from_slice(&self.used[..n]);
    }
}

impl<T: Copy> Put<T> for ManyLists<'_, T> {
    #[inline(always)]
    fn put(&mut self, bucket: usize, off: u32, u: T) {
        self.lists[bucket][self.used[bucket]] = (off, u);
        self.used[bucket] += 1;
    }
}

/// Fine ranges of axis targets that [`BucketMap`] groups into buckets: its table stays in L1.
const FINE_RANGES: usize = 4096;

/// Which bucket each axis target goes to: contiguous fine ranges of `1 << shift` targets,
/// grouped into buckets of consecutive ranges that receive about equal numbers of updates as
/// a sample of the round's indices counts them. So a skewed distribution (a power law, a few
/// hot targets, sorted indices whose round covers a narrow range) still gives every thread
/// its share of the apply pass; equal ranges would give one thread most of it.
///
/// A target's bucket is a function of the target, and buckets are disjoint sets of targets,
/// which is what the apply pass's disjointness proof rests on.
pub(super) struct BucketMap {
    shift: u32,
    /// The bucket of each fine range.
    table: Vec<u8>,
}

impl BucketMap {
    /// The fine ranges for `targets` axis positions: their shift and count.
    pub(super) fn fine(targets: usize) -> (u32, usize) {
        let mut shift = 0;
        while ((targets.max(1) - 1) >> shift) + 1 > FINE_RANGES {
            shift += 1;
        }
        (shift, ((targets.max(1) - 1) >> shift) + 1)
    }

    /// `buckets` (at most [`MAX_BUCKETS`]) groups of the fine ranges, balanced by `counts`
    /// (updates counted per fine range). A bucket takes ranges until it holds its share of
    /// the total; a range hotter than a share closes the bucket it joins. Without counts, the
    /// ranges are shared out evenly.
    pub(super) fn balanced(shift: u32, counts: &[u32], buckets: usize) -> BucketMap {
        let buckets = buckets.clamp(1, MAX_BUCKETS);
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let ranges = counts.len() as u64;
        let mut table = Vec::with_capacity(counts.len());
        let (mut bucket, mut acc) = (0u64, 0u64);
        for (r, &c) in counts.iter().enumerate() {
            table.push(bucket as u8);
            acc += if total == 0 { 1 } else { u64::from(c) };
            let whole = if total == 0 { ranges } else { total };
            // Past this bucket's share of the whole: the next range opens the next bucket.
            if bucket + 1 < buckets as u64
                && r + 1 < counts.len()
                && acc * buckets as u64 >= (bucket + 1) * whole
            {
                bucket += 1;
            }
        }
        BucketMap { shift, table }
    }

    #[inline(always)]
    pub(super) fn bucket(&self, target: usize) -> usize {
        usize::from(self.table[target >> self.shift])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets_of(map: &BucketMap, ranges: usize) -> Vec<usize> {
        (0..ranges).map(|r| map.bucket(r << map.shift)).collect()
    }

    #[test]
    fn buckets_hold_equal_shares_of_the_counted_updates() {
        let (shift, ranges) = BucketMap::fine(1_000_000);
        assert_eq!(ranges, ((1_000_000 - 1) >> shift) + 1);
        assert!(ranges <= FINE_RANGES);
        // A power law: most updates in the first ranges.
        let counts: Vec<u32> = (0..ranges).map(|r| (100_000 / (r + 1)) as u32).collect();
        let map = BucketMap::balanced(shift, &counts, 2);
        let b = buckets_of(&map, ranges);
        let share0: u64 = counts
            .iter()
            .zip(&b)
            .filter(|(_, &b)| b == 0)
            .map(|(&c, _)| u64::from(c))
            .sum();
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        assert!(
            share0 * 100 / total >= 45 && share0 * 100 / total <= 60,
            "{share0} of {total}"
        );
        // Consecutive ranges, buckets in order, every target mapped.
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(map.bucket(999_999), 1);
    }

    #[test]
    fn a_hot_range_closes_its_bucket() {
        let mut counts = vec![1u32; 64];
        counts[10] = 10_000;
        let map = BucketMap::balanced(0, &counts, 4);
        let b = buckets_of(&map, 64);
        assert_eq!(b[9], 0);
        assert_eq!(b[10], 0);
        assert_eq!(b[11], 1, "the ranges after the hot one go on");
        assert!(b[63] < 4);
        // No counts: the ranges shared out evenly.
        let map = BucketMap::balanced(0, &[0; 8], 2);
        assert_eq!(buckets_of(&map, 8), [0, 0, 0, 0, 1, 1, 1, 1]);
    }
}
