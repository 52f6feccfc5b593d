//! The run: [`ReduceKernel`]'s entries choose a [`Strategy`] and
//! [`ElementsKernel::execute`] runs it; the bucketed rounds live here too.

use super::buckets::{apply_lists, BucketMap, PartLists};
use super::kernel::ElementsKernel;
use super::private::folds_from_identity;
use super::split::ListedShare;
use super::strategy::{choose, Output, Strategy, Tuning, Workload};
use super::two_way::Pair;
use crate::fill::{filled, FillFrom};
use crate::kernel::{try_zeroed, DisjointSlice, PAR_MIN_ELEMENTS};
use crate::op::{codes, OpError};
use crate::par;
use crate::reduce::{Combine, Elem, ReduceKernel};
use crate::updates::Updates;

impl ElementsKernel<'_> {
    /// For 1-D-like shapes, in rounds of [`Tuning::ROUND_POSITIONS`] positions, in order. A sample of
    /// the round's indices shares the axis targets out into buckets of about equal numbers of
    /// updates ([`BucketMap`]). Pass 1 (in parallel over one contiguous part of the round per
    /// thread) validates every index and appends `(output offset, update)` to the part's list
    /// for the target's bucket. Pass 2 (in parallel over buckets) applies each bucket's lists
    /// in part order. So each output element sees its updates in row-major order. The lists
    /// are reused from round to round: they stay in cache and are faulted in once.
    /// Each round shares the output out anew, so each round's apply pass gets its own
    /// [`DisjointSlice`]: an element may move to another bucket from one round to the next.
    ///
    /// With `split_rounds` ([`Strategy::SplitRounds`]), each round runs split instead
    /// ([`ElementsKernel::split_round`]): on a small output the read-modify-writes stay in
    /// cache, so one task applies a share of each round straight into the output while the
    /// others partition the rest. Rounds run in order either way and each applies its
    /// updates in position order, so the result is the same bit for bit.
    pub(super) fn run_bucketed<
        T: Elem,
        C: Combine<T>,
        const TRACK: bool,
        U: Updates<T> + ?Sized,
    >(
        &self,
        out: &mut [T],
        counts: &mut [u32],
        updates: &U,
        split_rounds: bool,
    ) -> Result<(), OpError> {
        let g = &self.geometry;
        let threads = par::threads();
        let out_bytes = out.len().saturating_mul(std::mem::size_of::<T>());
        let buckets = Tuning::bucket_count(out_bytes, threads);
        let (shift, _) = BucketMap::fine(g.data_along);
        let mut parts: Vec<PartLists<T>> = (0..threads).map(|_| PartLists::new(buckets)).collect();
        let n = self.indices.len();
        let init = self.use_init_val;
        // Rounds keep the lists in cache when the output stays there too; a larger output
        // would be streamed in again by every round, so it runs in one.
        let round_len = if out_bytes <= Tuning::ROUNDS_MAX_OUTPUT_BYTES {
            Tuning::round_positions(std::mem::size_of::<Pair<T>>())
        } else {
            n
        };
        let flat = g.single_flat_row();
        let mut listed = ListedShare::new(parts.len());
        let mut next_sample = None;
        for round in (0..n).step_by(round_len) {
            let len = round_len.min(n - round);
            let sampled = match next_sample.take() {
                Some(sampled) => sampled,
                None => self.sample_targets(round..round + len),
            };
            let map = BucketMap::balanced(shift, &sampled, buckets);
            let map = &map;
            if split_rounds {
                let (positions, after) = (round..round + len, round + len);
                let next = (after < n).then(|| after..after + round_len.min(n - after));
                next_sample = self.split_round::<T, C, _>(
                    out,
                    positions,
                    next,
                    map,
                    &mut parts,
                    &mut listed,
                    updates,
                )?;
                continue;
            }
            self.partition_round(round..round + len, map, &sampled, &mut parts, updates)?;
            let parts = &parts;
            let (out, counts) = (DisjointSlice::new(out), DisjointSlice::new(counts));
            par::for_each_task(buckets, &|b| {
                let (out, counts) = (out.part(b), counts.part(b));
                // A histogram's bucket is one stretch of the output, which the random
                // read-modify-writes below would fetch from memory line by line: fetched
                // in order first, it streams in (the 32 MB i32 max: 24.5 to 23 ms).
                if flat {
                    let t = map.targets(b);
                    for i in t.step_by(64 / std::mem::size_of::<T>()) {
                        out.prefetch_write(i);
                    }
                }
                // SAFETY: task `b` reaches only the offsets `partition` put in bucket `b`.
                unsafe { apply_lists::<T, C, TRACK>(parts, b, 0, &out, &counts, init) };
            });
        }
        Ok(())
    }
}

impl ReduceKernel for ElementsKernel<'_> {
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        let w = self.workload::<T, C>(out.len());
        let strategy = choose(&w, Output::InPlace);
        self.execute::<T, C, _>(strategy, &w, Output::InPlace, out, updates)
    }

    /// Large flat histograms fill the output bucket by bucket (`fused.rs`), sorted indices
    /// chunk by chunk (`monotone.rs`); the rest copy the data first.
    fn run_into<T: Elem, C: Combine<T>>(
        &self,
        out: FillFrom<'_, T>,
        updates: &[T],
    ) -> Result<(), OpError> {
        let w = self.workload::<T, C>(out.len());
        match choose(&w, Output::Fresh) {
            Strategy::FillByBucket => self.run_bucketed_into::<T, C>(out, updates),
            Strategy::LocalChunks => self.run_local_into::<T, C, _>(&w, out, updates),
            strategy => {
                self.execute::<T, C, _>(strategy, &w, Output::Fresh, out.copy_all(), updates)
            }
        }
    }

    /// The strategies that read the updates a block at a time ([`Strategy::reads_by_block`]);
    /// `None` for the others, whose updates the caller widens whole.
    fn run_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Option<Result<(), OpError>> {
        let w = self.workload::<T, C>(out.len());
        let strategy = choose(&w, Output::Widened);
        strategy
            .reads_by_block()
            .then(|| self.execute::<T, C, U>(strategy, &w, Output::Widened, out, updates))
    }
}

impl ElementsKernel<'_> {
    /// What [`choose`] needs to know of a run onto `out_len` elements of `T` combined by `C`.
    pub(super) fn workload<T: Elem, C: Combine<T>>(&self, out_len: usize) -> Workload {
        let g = &self.geometry;
        let threads = par::threads();
        let mut w = Workload {
            positions: self.indices.len(),
            out_len,
            elem_bytes: std::mem::size_of::<T>(),
            threads,
            counted: self.track_counts,
            planned: self.plan.is_some(),
            line_indices: self.line_indices,
            rows: g.rows_apply(out_len),
            flat: g.single_flat_row(),
            lean_shape: g.inner == 1 && g.data_inner == 1 && g.outer_map.is_none(),
            splits: g.task_split(threads).is_some(),
            empty_axis: g.data_along == 0,
            folds_apart: folds_from_identity::<T, C>(),
            local: false,
        };
        w.local = w.samples_locality() && self.local(w.elem_bytes);
        w
    }

    /// Runs `strategy` on `out`, which holds the data, and what runs instead where it
    /// cannot ([`Strategy::instead`]); then divides for the mean where the strategy counted.
    pub(super) fn execute<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        strategy: Strategy,
        w: &Workload,
        output: Output,
        out: &mut [T],
        updates: &U,
    ) -> Result<(), OpError> {
        if self.track_counts && self.indices.len() > u32::MAX as usize {
            return Err(OpError::new(
                codes::MEMORY,
                "more than 2^32 indices with counted reductions",
            ));
        }
        let whole = || {
            updates.whole().ok_or_else(|| {
                OpError::new(
                    codes::INTERNAL,
                    "a scatter strategy needs its updates whole",
                )
            })
        };
        let mut counts: Vec<u32> = Vec::new();
        match strategy {
            Strategy::Rows => {
                if self.run_rows::<T, C>(out, whole()?)? {
                    return Ok(());
                }
                if self.line_indices {
                    let e = "one index per line did not make a row scatter";
                    return Err(OpError::new(codes::INTERNAL, e));
                }
                let instead = strategy.instead(w, output);
                return self.execute::<T, C, U>(instead, w, output, out, updates);
            }
            Strategy::LocalChunks => {
                if output == Output::Widened && self.run_monotone_from::<T, C, U>(out, updates)? {
                    return Ok(());
                }
                if self.run_local_chunks::<T, C, U>(out, updates)? {
                    return Ok(());
                }
                let instead = strategy.instead(w, output);
                return self.execute::<T, C, U>(instead, w, output, out, updates);
            }
            Strategy::PrivateFolds => {
                if self.run_private_folds::<T, C, U>(out, updates)? {
                    return Ok(());
                }
                let instead = strategy.instead(w, output);
                return self.execute::<T, C, U>(instead, w, output, out, updates);
            }
            Strategy::Lean => return self.run_flat::<T, C, U>(out, updates),
            Strategy::SplitRounds | Strategy::Bucketed | Strategy::FillByBucket => {
                let split = strategy == Strategy::SplitRounds;
                if self.track_counts {
                    counts = try_zeroed(out.len())?;
                    self.run_bucketed::<T, C, true, U>(out, &mut counts, updates, split)?;
                } else {
                    self.run_bucketed::<T, C, false, U>(out, &mut counts, updates, split)?;
                }
            }
            Strategy::Planned | Strategy::Tasks => {
                if self.track_counts {
                    counts = try_zeroed(out.len())?;
                }
                let updates = whole()?;
                let (o, c) = (DisjointSlice::new(out), DisjointSlice::new(&mut counts));
                let init = self.use_init_val;
                match self.plan {
                    Some(plan) if self.track_counts => {
                        plan.apply::<T, C, true>(&o, &c, init, updates)
                    }
                    Some(plan) => plan.apply::<T, C, false>(&o, &c, init, updates),
                    None => {
                        let tasks = self.tasks();
                        par::try_for_each_task(tasks.len(), &|i| {
                            self.run_task::<T, C>(&tasks[i], &o.part(i), &c.part(i), updates)
                        })?;
                    }
                }
            }
        }
        if self.mean {
            let extra = u64::from(self.use_init_val);
            par::for_each_split_mut(out, PAR_MIN_ELEMENTS, &|start, xs| {
                for (x, &k) in xs.iter_mut().zip(&counts[start..]) {
                    if k > 0 {
                        *x = x.div_count(u64::from(k) + extra);
                    }
                }
            });
        }
        Ok(())
    }

    /// [`Strategy::LocalChunks`] on an output not written yet: sorted or reverse-sorted
    /// indices run as monotone chunks that fill their pieces as they go, without the
    /// planning pass over every index, and a chunk that leaves its piece starts everything
    /// again on the output copied whole; other local indices are planned once here, and a
    /// plan that does not hold runs the lean pass without another.
    fn run_local_into<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        w: &Workload,
        out: FillFrom<'_, T>,
        updates: &U,
    ) -> Result<(), OpError> {
        if let Some(chunks) = self.monotone_chunks() {
            return match self.run_monotone_into::<T, C, U>(chunks, out, updates)? {
                None => Ok(()),
                Some(again) => {
                    let strategy = Strategy::LocalChunks;
                    self.execute::<T, C, U>(strategy, w, Output::InPlace, again, updates)
                }
            };
        }
        match self.local_plan::<T, C, U>(updates) {
            Some(plan) => self.run_local_plan::<T, C, U>(plan, out.copy_all(), updates),
            None => {
                let instead = Strategy::LocalChunks.instead(w, Output::Fresh);
                self.execute::<T, C, U>(instead, w, Output::Fresh, out.copy_all(), updates)
            }
        }
    }

    /// Monotone chunks (as in [`ElementsKernel::run_local_into`]) for a run in place: into
    /// a new buffer filled from `out` and copied back after. `Ok(false)`, with `out`
    /// untouched, when the indices are not monotone or a chunk left its piece (16M f16 sums
    /// onto 1M, 2 threads, medians of 4 alternating runs: sorted 14.88 to 11.20 ms,
    /// reversed 15.16 to 11.52 against the planning pass, which read 128 MB of indices).
    fn run_monotone_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Result<bool, OpError> {
        let Some(chunks) = self.monotone_chunks() else {
            return Ok(false);
        };
        let mut strayed = false;
        let fresh = filled(out, |fill| {
            let again = self.run_monotone_into::<T, C, U>(chunks, fill, updates)?;
            strayed = again.is_some();
            Ok::<(), OpError>(())
        })?;
        if strayed {
            return Ok(false);
        }
        par::copy(out, &fresh);
        Ok(true)
    }
}
