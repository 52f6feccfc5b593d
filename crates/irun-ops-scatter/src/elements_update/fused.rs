//! The bucketed histogram of a large output that the op does not own: each bucket's task
//! copies its stretch of the data into the output, then applies its lists to it.
//!
//! Copied first and whole, a 32 MB output goes to memory, comes back line by line when
//! the bucket's read-modify-writes reach it, and goes to memory again. Copied by the task
//! that applies the bucket, the stretch is in cache when the lists are applied, and the
//! separate copy pass is gone.

use std::ops::Range;

use super::buckets::apply_lists;
use super::buckets::{BucketMap, PartLists};
use super::kernel::ElementsKernel;
use super::strategy::Tuning;
use crate::fill::FillFrom;
use crate::kernel::DisjointSlice;
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};

impl ElementsKernel<'_> {
    /// [`ElementsKernel::run_bucketed`]'s one round, with the output filled from the data
    /// by the apply pass: the positions are partitioned into lists by bucket as there, then
    /// the task of bucket `b` copies `b`'s stretch of the data and applies `b`'s lists to it,
    /// in part order, so each element sees its updates in row-major order.
    pub(super) fn run_bucketed_into<T: Elem, C: Combine<T>>(
        &self,
        out: FillFrom<'_, T>,
        updates: &[T],
    ) -> Result<(), OpError> {
        let (n, threads) = (out.len(), par::threads());
        let buckets = Tuning::bucket_count(n.saturating_mul(std::mem::size_of::<T>()), threads);
        let (shift, _) = BucketMap::fine(self.geometry.data_along);
        let positions = 0..self.indices.len();
        let sampled = self.sample_targets(positions.clone());
        let range_bytes = std::mem::size_of::<T>() << shift;
        let map = BucketMap::capped(shift, &sampled, buckets, Tuning::BUCKET_BYTES / range_bytes);
        let buckets = map.buckets();
        let mut parts: Vec<PartLists<T>> = (0..threads).map(|_| PartLists::new(buckets)).collect();
        self.partition_round(positions, &map, &sampled, &mut parts, updates)?;
        // A flat histogram's output offset is its axis target, so bucket `b` reaches only
        // `map.targets(b)`; buckets take consecutive fine ranges in order, so the stretches
        // tile the output (the last fine range may run past its end).
        let stretches: Vec<Range<usize>> = (0..buckets)
            .map(|b| {
                let t = map.targets(b);
                t.start.min(n)..t.end.min(n)
            })
            .collect();
        let tiled = stretches.first().is_some_and(|r| r.start == 0)
            && stretches
                .windows(2)
                .all(|w| w[0].end == w[1].start || w[1].is_empty())
            && stretches
                .iter()
                .rev()
                .find(|r| !r.is_empty())
                .is_some_and(|r| r.end == n);
        if !tiled {
            return Err(OpError::new(
                crate::op::codes::INTERNAL,
                "internal error: the buckets do not tile the output",
            ));
        }
        let lengths = stretches.iter().map(|r| r.len());
        let mut pieces: Vec<Option<FillFrom<'_, T>>> =
            out.split_lengths(lengths).into_iter().map(Some).collect();
        // A bucket's work is its stretch's copy and its pairs' applies. The map balances
        // the counted updates, but caps a bucket's stretch: a skewed histogram's dense head
        // makes narrow buckets with many pairs, its tail wide ones with few. Handed out in
        // index order, one thread got the head (8M power-law i32 maxima: 7.4 ms of applies
        // against 5.0 for the other); handed out largest first, they finish together.
        let costs: Vec<u64> = (0..buckets)
            .map(|b| (PartLists::pairs_in(&parts, b) + stretches[b].len()) as u64)
            .collect();
        let (parts, init) = (&parts, self.use_init_val);
        par::for_each_mut_by_cost(&mut pieces, &costs, &|b, piece| {
            let Some(piece) = piece.take() else { return };
            let stretch = piece.copy_here();
            let (out, counts) = (DisjointSlice::new(stretch), DisjointSlice::new(&mut [][..]));
            let base = stretches[b].start;
            // SAFETY: task `b` reaches only the offsets `partition` put in bucket `b`, which
            // lie in `stretches[b]` (above), and `out` is that stretch, offset by `base`; no
            // counts are kept ([`super::strategy::Strategy::FillByBucket`]).
            unsafe {
                apply_lists::<T, C, false>(parts, b, base, &out.part(b), &counts.part(b), init)
            };
        });
        Ok(())
    }
}
