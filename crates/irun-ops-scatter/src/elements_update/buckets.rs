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
