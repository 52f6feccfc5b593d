//! The run-time kernel: how the work is split between tasks (rows, columns, or buckets of
//! targets in rounds), and the loops of each path.

use std::ops::Range;
use std::time::Instant;

use super::buckets::{BucketMap, Pair, PartLists, MAX_BUCKETS};
use super::geometry::{hit, Geometry};
use super::lean::FAR_AHEAD;
use super::plan::ElementsPlan;
use super::private::{folds_from_identity, PrivateCopies};
use super::round_modes::{RoundMemory, RoundMode, RoundModes};
use super::split::SplitState;
use crate::fill::{filled, FillFrom};
use crate::index_out_of_range;
use crate::kernel::{
    pieces, split_range, try_zeroed, DisjointSlice, IndexValues, Part, PAR_MIN_ELEMENTS,
};
use crate::op::{codes, OpError};
use crate::par;
use crate::reduce::{Combine, Elem, ReduceKernel};
use crate::updates::Updates;

/// The part of the work one task does: outer and inner positions of the indices, and the axis
/// (each task owns the output elements of its rows and columns).
pub(super) struct Task {
    pub(super) outer: Range<usize>,
    pub(super) inner: Range<usize>,
}

pub(super) struct ElementsKernel<'a> {
    pub(super) indices: IndexValues<'a>,
    pub(super) indices_shape: &'a [usize],
    pub(super) geometry: Geometry,
    pub(super) mean: bool,
    pub(super) use_init_val: bool,
    /// Per-element hit counts are needed for mean and for `use_init_val=false`.
    pub(super) track_counts: bool,
    /// The indices' work done at compile time, if they are constant.
    pub(super) plan: Option<&'a ElementsPlan>,
    /// How the op's split rounds ran last time, to start from and to update.
    pub(super) rounds: Option<&'a RoundMemory>,
    /// `indices` hold one value per line of inner columns: the indices before a broadcast
    /// along every dim after the axis (see [`ScatterElementsUpdate::eval_broadcast`]). Only
    /// the row path reads them so.
    ///
    /// [`ScatterElementsUpdate::eval_broadcast`]: irun_opkit::op::Op::eval_broadcast
    pub(super) line_indices: bool,
}

impl ElementsKernel<'_> {
    /// Splits the work so that no two tasks can write the same output element, and each
    /// element sees its updates in row-major order: by outer rows of the output, else by
    /// inner columns; shapes that neither split serves run bucketed (`run_bucketed`) or, when
    /// small, on one task.
    pub(super) fn tasks(&self) -> Vec<Task> {
        let g = &self.geometry;
        let full = || Task {
            outer: 0..g.outer,
            inner: 0..g.inner,
        };
        let n = self.indices.len();
        let threads = par::threads();
        if n < PAR_MIN_ELEMENTS || threads == 1 {
            return vec![full()];
        }
        if g.outer >= threads {
            let k = pieces(g.outer, 1);
            return split_range(g.outer, k)
                .into_iter()
                .map(|outer| Task { outer, ..full() })
                .collect();
        }
        if g.inner >= 64 * threads {
            let k = pieces(g.inner, 64);
            return split_range(g.inner, k)
                .into_iter()
                .map(|inner| Task { inner, ..full() })
                .collect();
        }
        vec![full()]
    }

    /// Whether to run bucketed ([`ElementsKernel::run_bucketed`]): large work that the row
    /// and column splits cannot share out (1-D-like shapes: histograms, 1-D max), with an
    /// output small enough for 32-bit offsets and not empty (every index of an empty axis is
    /// out of range, which the other paths report). Not local indices on a flat histogram
    /// (the output offset is the axis target): they run lean, in chunks where they can. Nor a
    /// flat histogram whose output fits in [`SERIAL_MAX_OUTPUT_BYTES`] with counts or too few
    /// positions for split rounds: its read-modify-writes stay in cache, and then the lean
    /// pass beats partitioning; with enough positions, [`ElementsKernel::run_bucketed`] runs
    /// split rounds, which do both.
    pub(super) fn bucketed(&self, out_len: usize, out_bytes: usize) -> bool {
        let g = &self.geometry;
        let threads = par::threads();
        let flat = g.single_flat_row();
        let elem_bytes = out_bytes / out_len.max(1);
        let small = flat && out_bytes <= SERIAL_MAX_OUTPUT_BYTES;
        let unsplit = small && (self.track_counts || self.indices.len() < SPLIT_MIN_POSITIONS);
        threads > 1
            && !unsplit
            && !(flat && self.local(elem_bytes))
            && self.indices.len() >= BUCKETED_MIN_INDICES
            && g.data_along > 0
            && g.outer < threads
            && g.inner < 64 * threads
            && out_len <= u32::MAX as usize
    }

    /// For 1-D-like shapes, in rounds of [`ROUND_POSITIONS`] positions, in order. A sample of
    /// the round's indices shares the axis targets out into buckets of about equal numbers of
    /// updates ([`BucketMap`]). Pass 1 (in parallel over one contiguous part of the round per
    /// thread) validates every index and appends `(output offset, update)` to the part's list
    /// for the target's bucket. Pass 2 (in parallel over buckets) applies each bucket's lists
    /// in part order. So each output element sees its updates in row-major order. The lists
    /// are reused from round to round: they stay in cache and are faulted in once.
    /// Each round shares the output out anew, so each round's apply pass gets its own
    /// [`DisjointSlice`]: an element may move to another bucket from one round to the next.
    ///
    /// A flat histogram on an output of at most [`SERIAL_MAX_OUTPUT_BYTES`] runs split rounds
    /// instead ([`ElementsKernel::split_round`]): its read-modify-writes stay in cache, so
    /// one task applies a share of each round straight into the output while the others
    /// partition the rest. Rounds run in order either way and each applies its updates in
    /// position order, so the result is the same bit for bit.
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
    ) -> Result<(), OpError> {
        let g = &self.geometry;
        let threads = par::threads();
        let out_bytes = out.len().saturating_mul(std::mem::size_of::<T>());
        let buckets = bucket_count(out_bytes, threads);
        let (shift, _) = BucketMap::fine(g.data_along);
        let mut parts: Vec<PartLists<T>> = (0..threads).map(|_| PartLists::new(buckets)).collect();
        let n = self.indices.len();
        let init = self.use_init_val;
        // Rounds keep the lists in cache when the output stays there too; a larger output
        // would be streamed in again by every round, so it runs in one.
        let round_len = if out_bytes <= ROUNDS_MAX_OUTPUT_BYTES {
            round_positions(std::mem::size_of::<Pair<T>>())
        } else {
            n
        };
        // Split rounds time their tasks, which WebAssembly's clock cannot (nothing runs
        // bucketed there anyway, with one thread).
        let flat = g.single_flat_row();
        let split_rounds = !TRACK
            && flat
            && out_bytes <= SERIAL_MAX_OUTPUT_BYTES
            && n >= SPLIT_MIN_POSITIONS
            && !cfg!(target_family = "wasm");
        let mut split = SplitState::new(buckets, parts.len());
        // Only split rounds choose a way: other runs neither read nor keep the memory.
        let memory = self.rounds.filter(|_| split_rounds);
        let mut modes = memory.map(RoundMemory::recall).unwrap_or_default();
        // Where the one-task way may share its round out instead: on combines that fold
        // apart and commute, each thread folds a chunk, all but the first into a private
        // copy of the output, and the copies join the output after the last round.
        let private_rounds = folds_from_identity::<T, C>() && C::COMMUTES;
        let mut copies = PrivateCopies::default();
        let mut private_positions = 0;
        let mut next_sample = None;
        for (k, round) in (0..n).step_by(round_len).enumerate() {
            let len = round_len.min(n - round);
            // A run's first round samples its indices first and faults its lists in: not
            // a measure of either way.
            let measured = |modes: &mut RoundModes, mode, started: Instant| {
                if k > 0 {
                    modes.took(mode, len, started.elapsed().as_nanos() as u64);
                }
            };
            if split_rounds && modes.next() == RoundMode::Lean {
                let started = Instant::now();
                let positions = round..round + len;
                let folded = private_rounds
                    && self.fold_privately::<T, C, U>(
                        out,
                        &mut copies,
                        positions.clone(),
                        updates,
                    )?;
                if folded {
                    private_positions += len;
                } else {
                    self.lean_round::<T, C, _>(out, positions, updates)?;
                }
                measured(&mut modes, RoundMode::Lean, started);
                next_sample = None;
                continue;
            }
            let sampled = match next_sample.take() {
                Some(sampled) => sampled,
                None => self.sample_targets(round..round + len),
            };
            let map = match split_rounds {
                true => BucketMap::shared(shift, &sampled, split.buckets.shares()),
                false => BucketMap::balanced(shift, &sampled, buckets),
            };
            let map = &map;
            if split_rounds {
                let (positions, after) = (round..round + len, round + len);
                let next = (after < n).then(|| after..after + round_len.min(n - after));
                let started = Instant::now();
                next_sample = self.split_round::<T, C, _>(
                    out, positions, next, map, &mut parts, &mut split, updates,
                )?;
                measured(&mut modes, RoundMode::Split, started);
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
        // Those combines commute, so what the private rounds folded apart may join the
        // output after the rounds that came later. Filling and folding the copies is part
        // of what those rounds cost, which their own measures did not see.
        let extra = copies.fold_into::<C>(out);
        if private_positions > 0 {
            let per_position = extra.as_nanos() as f64 / private_positions as f64;
            modes.charge(RoundMode::Lean, per_position);
        }
        if let Some(memory) = memory {
            modes.finish_run();
            memory.keep(modes);
        }
        Ok(())
    }

    /// A round of split histogram on the lean task alone ([`RoundMode::Lean`]). Not inlined:
    /// inlined into [`Self::run_bucketed`], its loop made the split rounds' code 6% slower
    /// (the 16M f32 sum of skewed indices, 15.6 to 16.5 ms).
    #[inline(never)]
    fn lean_round<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        positions: Range<usize>,
        updates: &U,
    ) -> Result<(), OpError> {
        self.lean_range::<T, C, _>(out, 0, positions, updates)
    }

    /// Whether consecutive positions target nearby elements (sorted or reverse-sorted
    /// indices, one target for all): then the lean pass streams through the output, in
    /// chunks of positions with disjoint target ranges where it can
    /// ([`ElementsKernel::run_local_chunks`]), which beats partitioning whatever the output's
    /// size (8M sorted i32 maxima on a 2-core Xeon: 9 ms in chunks, 14 ms in one pass, 34 ms
    /// bucketed). Judged from [`SAMPLE_BLOCKS`] evenly spaced blocks of positions: the
    /// median block's targets span at most [`LOCAL_SPAN_BYTES`] of output.
    pub(super) fn local(&self, elem_bytes: usize) -> bool {
        let mut spans: Vec<usize> = sample_blocks(0..self.indices.len())
            .map(|block| {
                let (mut lo, mut hi) = (usize::MAX, 0usize);
                self.each_target(block, |t| (lo, hi) = (lo.min(t), hi.max(t)));
                hi.saturating_sub(lo)
            })
            .collect();
        spans.sort_unstable();
        spans
            .get(SAMPLE_BLOCKS / 2)
            .is_some_and(|span| span.saturating_mul(elem_bytes) <= LOCAL_SPAN_BYTES)
    }

    /// Updates per fine range of axis targets ([`BucketMap::fine`]) among [`SAMPLE_BLOCKS`]
    /// evenly spaced blocks of positions `round`; indices out of range are left to pass 1,
    /// which reports them.
    pub(super) fn sample_targets(&self, round: Range<usize>) -> Vec<u32> {
        let (shift, ranges) = BucketMap::fine(self.geometry.data_along);
        let mut counts = vec![0u32; ranges];
        // The blocks lie far apart, each a trip to memory: requested together, the trips
        // overlap (16 rounds' samples of a 16M sum: 0.85 to 0.5 ms).
        for block in sample_blocks(round.clone()) {
            self.indices.prefetch(block);
        }
        for block in sample_blocks(round) {
            self.each_target(block, |t| counts[t >> shift] += 1);
        }
        counts
    }

    /// Calls `f` with the axis target of each index of `positions` that is in range; the
    /// others are left to the pass that reports them.
    fn each_target(&self, positions: Range<usize>, mut f: impl FnMut(usize)) {
        let g = &self.geometry;
        let _ = self.indices.for_each_block(positions, |_, vals| {
            for &v in vals {
                let t = g.target(v);
                if t < g.data_along {
                    f(t);
                }
            }
            Ok::<(), ()>(())
        });
    }

    pub(super) fn run_task<T: Elem, C: Combine<T>>(
        &self,
        task: &Task,
        out: &Part<T>,
        counts: &Part<u32>,
        updates: &[T],
    ) -> Result<(), (usize, OpError)> {
        // Monomorphised on counting, so the common path has no per-element count test.
        if self.track_counts {
            self.run_task_with::<T, C, true>(task, out, counts, updates)
        } else {
            self.run_task_with::<T, C, false>(task, out, counts, updates)
        }
    }

    pub(super) fn run_task_with<T: Elem, C: Combine<T>, const TRACK: bool>(
        &self,
        task: &Task,
        out: &Part<T>,
        counts: &Part<u32>,
        updates: &[T],
    ) -> Result<(), (usize, OpError)> {
        let g = &self.geometry;
        let init = self.use_init_val;
        let full_inner = task.inner == (0..g.inner);
        let (inner_lo, inner_len) = (task.inner.start, task.inner.len());
        let inner_at = |i: usize| g.inner_map.as_ref().map_or(i, |m| m[i]);
        // Each element of a line (a stretch of positions on one inner range) to its target.
        let scattered = |base: usize, line_start: usize, start: usize, vals: &[i64], upd: &[T]| {
            // The inner coordinate of the block's first element; then counted.
            let mut i = inner_lo + (start - line_start) % inner_len;
            for (k, (&v, &u)) in vals.iter().zip(upd).enumerate() {
                let t = g.target(v);
                if t >= g.data_along {
                    return Err((start + k, self.out_of_range(start + k, v)));
                }
                let off = base + t * g.data_inner + inner_at(i);
                // SAFETY: `tasks()` gives each task disjoint outer rows or disjoint inner
                // columns; `off` lies in this task's outer row `o` (the outer map is
                // injective) and inner column `inner_at(i)` (so is the inner map), so no
                // element is reached by two tasks.
                unsafe { hit::<T, C, TRACK>(out, counts, init, off, u) };
                i += 1;
                if i == inner_lo + inner_len {
                    i = inner_lo;
                }
            }
            Ok(())
        };
        for o in task.outer.clone() {
            let base = g.row_base(o);
            let row = o * g.along * g.inner;
            if full_inner {
                // The whole [along, inner] plane of this outer row is contiguous.
                let plane = row..row + g.along * g.inner;
                self.indices.for_each_block(plane, |start, vals| {
                    scattered(base, row, start, vals, &updates[start..start + vals.len()])
                })?;
                continue;
            }
            for a in 0..g.along {
                let line_start = row + a * g.inner + inner_lo;
                let line = line_start..line_start + inner_len;
                self.indices.for_each_block(line, |start, vals| {
                    scattered(
                        base,
                        line_start,
                        start,
                        vals,
                        &updates[start..start + vals.len()],
                    )
                })?;
            }
        }
        Ok(())
    }

    pub(super) fn out_of_range(&self, pos: usize, v: i64) -> OpError {
        let d = self.geometry.data_along;
        index_out_of_range(
            self.indices_shape,
            pos,
            v,
            &format!("[{}, {}]", -(d as i64), d as i64 - 1),
            &format!("axis {} of size {d}", self.geometry.axis),
        )
    }
}

/// Pass 2 of the bucketed paths for bucket `b`: every part's list for it, in part order.
///
/// # Safety
/// Task `b` must reach only the offsets the partition put in bucket `b`, those whose axis
/// target the round's [`BucketMap`] gives bucket `b`: the map is a function of the target,
/// so the buckets' target sets are disjoint, and an offset's axis target is a function of
/// the offset, so no element is reached by two tasks.
pub(super) unsafe fn apply_lists<T: Elem, C: Combine<T>, const TRACK: bool>(
    parts: &[PartLists<T>],
    b: usize,
    base: usize,
    out: &Part<T>,
    counts: &Part<u32>,
    init: bool,
) {
    for part in parts {
        // SAFETY: the caller's contract.
        unsafe { apply_pairs::<T, C, TRACK, false>(part.bucket(b), base, out, counts, init) };
    }
}

/// Applies `pairs` in order, each at its offset less `base`. With `FETCH`, asks for each
/// pair's output line [`FAR_AHEAD`] pairs ahead: for a bucket's stretch of output beyond
/// the core's caches ([`FAR_BUCKET_BYTES`] or more). The f64 sum's split rounds (8 MB
/// output, two buckets of 4 MB) applied 1.99, 3.23 and 1.50 ns a pair in three traced runs
/// without it, 1.52, 2.38 and 1.29 with it. (Stand-alone, one thread, random pairs: 1.5 to
/// 1.0 ns a pair onto 4 MB, 4.5 to 1.3 onto 8 MB, but 0.87 to 0.89 onto 2 MB.)
///
/// # Safety
/// As [`apply_lists`]: the pairs are bucket `b`'s (or some of them) and this is task `b`.
#[inline(always)]
pub(super) unsafe fn apply_pairs<T: Elem, C: Combine<T>, const TRACK: bool, const FETCH: bool>(
    pairs: &[Pair<T>],
    base: usize,
    out: &Part<T>,
    counts: &Part<u32>,
    init: bool,
) {
    for (k, &Pair { off, val }) in pairs.iter().enumerate() {
        if FETCH {
            if let Some(ahead) = pairs.get(k + FAR_AHEAD) {
                // A hint only: nothing is checked here, and a prefetch never faults.
                out.prefetch_write((ahead.off as usize).wrapping_sub(base));
            }
        }
        // SAFETY: the caller's contract.
        unsafe { hit::<T, C, TRACK>(out, counts, init, off as usize - base, val) };
    }
}

/// A bucket's stretch of output from which [`apply_pairs`] asking ahead pays.
pub(super) const FAR_BUCKET_BYTES: usize = 3 << 20;

/// Output bytes that a block of [`SAMPLE_BLOCK`] consecutive positions may span and still
/// count as local ([`ElementsKernel::local`]).
const LOCAL_SPAN_BYTES: usize = 64 << 10;

/// Flat histograms with outputs up to this size keep their read-modify-writes in cache: they
/// run lean when there are too few positions for split rounds, else in split rounds
/// ([`ElementsKernel::split_round`]). Measured with 16M updates: a 4 MB f32 output takes
/// 20 ms lean and 31-35 ms bucketed on a 2-core EPYC (2026-11-22), 57 ms lean and 36 ms
/// bucketed on a 2-core Xeon (2026-11-23); a 32 MB i32 one 160 ms lean and 54 ms bucketed
/// on the EPYC, so larger outputs always run bucketed.
pub(super) const SERIAL_MAX_OUTPUT_BYTES: usize = 8 << 20;

/// Flat histograms on small outputs run split rounds from this many positions; fewer run
/// in one lean pass.
pub(super) const SPLIT_MIN_POSITIONS: usize = 4 * ROUND_POSITIONS;

/// Fewer indices than this run in one lean pass rather than bucketed.
pub(super) const BUCKETED_MIN_INDICES: usize = 1 << 18;

/// Positions per round of [`ElementsKernel::run_bucketed`]: its lists (8 MiB for 4-byte
/// updates) and the round's indices and updates stay in a 32 MiB L3. (Measured on a 2-core
/// EPYC: 2^20 is best for a 4 MiB histogram; 2^19 is 2.5x slower.)
pub(super) const ROUND_POSITIONS: usize = 1 << 20;

/// The list bytes a round of [`ElementsKernel::run_bucketed`] may write, at most: 2^20
/// 8-byte pairs. With 12-byte pairs (f64, i64) rounds of 2^19 positions, whose lists stay
/// in the L3 beside an 8 MB output, ran 16M sums 9-12% faster than rounds of 2^20 (Zen 4,
/// 2 threads: f64 uniform 25.13 to 22.21 ms, skewed 25.19 to 22.68, i64 uniform 24.79 to
/// 22.56; 2^18 22.94, 2^21 26.31).
const ROUND_LIST_BYTES: usize = 8 << 20;

/// Positions per round of [`ElementsKernel::run_bucketed`] for pairs of `pair_bytes`:
/// [`ROUND_POSITIONS`], halved while the round's pairs exceed [`ROUND_LIST_BYTES`] (down to
/// a quarter of it).
pub(super) fn round_positions(pair_bytes: usize) -> usize {
    let mut len = ROUND_POSITIONS;
    while len > ROUND_POSITIONS / 4 && len.saturating_mul(pair_bytes) > ROUND_LIST_BYTES {
        len /= 2;
    }
    len
}

/// Outputs larger than this run [`ElementsKernel::run_bucketed`] in one round (measured:
/// a 32 MiB i32 max runs in 31 ms in one round, 43 ms in rounds of 2^20).
pub(super) const ROUNDS_MAX_OUTPUT_BYTES: usize = 16 << 20;

/// Output bytes per bucket that keep pass 2's read-modify-writes in cache.
pub(super) const BUCKET_BYTES: usize = 1 << 20;

/// Outputs up to this size run in two buckets on two threads: the two-bucket writer
/// ([`super::buckets::TwoLists`]) has no branch and keeps its cursors in registers, which
/// gains more in pass 1 than smaller buckets gain in pass 2.
const TWO_BUCKETS_MAX_BYTES: usize = 8 << 20;

/// Buckets: one per thread at least, more when the output is larger than [`BUCKET_BYTES`]
/// per bucket, and at most [`MAX_BUCKETS`]; two on two threads up to
/// [`TWO_BUCKETS_MAX_BYTES`]. Measured on a 2-core Xeon (2 MiB L2 per core), 2026-11-23,
/// with 16M updates onto a 4 MiB f32 histogram: 38 ms in two buckets, 47 in four; 8M i32
/// maxima onto 32 MiB: 27 ms in 32 buckets, 33 in 8.
pub(super) fn bucket_count(out_bytes: usize, threads: usize) -> usize {
    if threads == 2 && out_bytes <= TWO_BUCKETS_MAX_BYTES {
        return 2;
    }
    threads
        .max(out_bytes.div_ceil(BUCKET_BYTES))
        .min(MAX_BUCKETS)
}

/// Blocks of [`SAMPLE_BLOCK`] positions per round that [`BucketMap`]'s counts come from:
/// 8192 of a round's 2^20 positions, enough to see a hot range, a few microseconds to read.
const SAMPLE_BLOCKS: usize = 64;
const SAMPLE_BLOCK: usize = 128;

/// The [`SAMPLE_BLOCKS`] evenly spaced blocks of [`SAMPLE_BLOCK`] positions of `round` that
/// the samples read; none when the round is too short for them to lie apart.
fn sample_blocks(round: Range<usize>) -> impl Iterator<Item = Range<usize>> {
    let step = round.len() / SAMPLE_BLOCKS;
    let blocks = if step < SAMPLE_BLOCK {
        0
    } else {
        SAMPLE_BLOCKS
    };
    (0..blocks).map(move |k| {
        let start = round.start + k * step;
        start..start + SAMPLE_BLOCK
    })
}

impl ReduceKernel for ElementsKernel<'_> {
    /// Large flat histograms fill the output bucket by bucket (`fused.rs`); the rest copy
    /// the data first.
    fn run_into<T: Elem, C: Combine<T>>(
        &self,
        out: FillFrom<'_, T>,
        updates: &[T],
    ) -> Result<(), OpError> {
        let n = out.len();
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        if self.fills_by_bucket(n, bytes) {
            return self.run_bucketed_into::<T, C>(out, updates);
        }
        let rows = self.line_indices
            || self.indices.len() >= PAR_MIN_ELEMENTS && self.geometry.rows_apply(n);
        if !rows
            && self.runs_lean(self.bucketed(n, bytes))
            && self.chunkable(std::mem::size_of::<T>())
        {
            // Sorted or reverse-sorted: each chunk's piece follows from where it starts, and
            // a chunk that leaves it starts everything again (one pass over the indices
            // fewer than planning, which reads them all to find each chunk's span).
            if let Some(chunks) = self.monotone_chunks() {
                return match self.run_monotone_into::<T, C, _>(chunks, out, updates)? {
                    None => Ok(()),
                    Some(again) => self.run_with::<T, C>(again, updates, true),
                };
            }
            // Planned once here: a plan that does not hold runs the rest without another.
            // (Disjoint but not monotone chunks, or folded runs: all indices equal.)
            return match self.local_plan::<T, C, _>(updates) {
                Some(plan) => self.run_local_plan::<T, C, _>(plan, out.copy_all(), updates),
                None => self.run_with::<T, C>(out.copy_all(), updates, false),
            };
        }
        self.run::<T, C>(out.copy_all(), updates)
    }

    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        self.run_with::<T, C>(out, updates, true)
    }

    /// The runs of [`ElementsKernel::run_with`] on flat 1-D histograms of floats without
    /// counts, whose loops read the updates block by block: split or bucketed rounds
    /// ([`ElementsKernel::run_bucketed`]) for scattered indices, the lean pass in chunks for
    /// local ones ([`ElementsKernel::run_local_chunks`]), else the lean pass on one task.
    /// Integers are left to `run` (they may take the private folds; f16 and bf16, the
    /// only updates read by block, compute in f32 anyway).
    fn run_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Option<Result<(), OpError>> {
        let (len, bytes) = (out.len(), std::mem::size_of_val(out));
        let rows = self.line_indices
            || self.indices.len() >= PAR_MIN_ELEMENTS && self.geometry.rows_apply(len);
        if T::EXACT || rows || self.track_counts || self.plan.is_some() {
            return None;
        }
        let bucketed = self.bucketed(len, bytes);
        if bucketed {
            return Some(self.run_bucketed::<T, C, false, U>(out, &mut [], updates));
        }
        if !self.runs_lean(bucketed) {
            return None;
        }
        Some(self.run_lean_from::<T, C, U>(out, updates))
    }
}

impl ElementsKernel<'_> {
    /// Whether a histogram runs the lean pass ([`ElementsKernel::run_flat`], or in chunks)
    /// unless the row scatter takes it: a flat one, without counts, planned at run time, not
    /// `bucketed` ([`ElementsKernel::bucketed`]'s answer for its output, which the caller
    /// has or needs too).
    fn runs_lean(&self, bucketed: bool) -> bool {
        let g = &self.geometry;
        let flat = g.inner == 1 && g.data_inner == 1 && g.outer_map.is_none() && !self.track_counts;
        flat && self.plan.is_none() && !bucketed
    }

    /// [`ReduceKernel::run_from`]'s lean paths. Sorted or reverse-sorted indices run as
    /// monotone chunks, without the planning pass over every index, into a new buffer
    /// filled from `out` and copied back after, as [`ReduceKernel::run_into`] runs them
    /// into a new output: a chunk that leaves its piece stops them all, and `out`, which
    /// still holds the data, runs the other lean paths (16M f16 sums onto 1M, 2 threads,
    /// medians of 4 alternating runs: sorted 14.88 to 11.20 ms, reversed 15.16 to 11.52;
    /// the planning pass read 128 MB of indices).
    fn run_lean_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Result<(), OpError> {
        let chunkable = self.chunkable(std::mem::size_of::<T>());
        if let Some(chunks) = chunkable.then(|| self.monotone_chunks()).flatten() {
            let mut strayed = false;
            let fresh = filled(out, |fill| {
                let again = self.run_monotone_into::<T, C, U>(chunks, fill, updates)?;
                strayed = again.is_some();
                Ok::<(), OpError>(())
            })?;
            if !strayed {
                par::copy(out, &fresh);
                return Ok(());
            }
        }
        // With `lean`, one of the lean paths always serves.
        self.run_lean_paths::<T, C, U>(out, updates, true, chunkable)
            .map(|_| ())
    }

    /// The paths of a flat histogram without lists: with `lean`, the lean pass in chunks
    /// when `chunkable` (the caller's answer of [`ElementsKernel::chunkable`], or `false`
    /// not to try them: [`ElementsKernel::run_local_chunks`]); lean or not, the private
    /// folds of an integer histogram; with `lean`, the lean pass on one task. `Ok(true)`
    /// once one of them ran, `Ok(false)` when none serves.
    fn run_lean_paths<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
        lean: bool,
        chunkable: bool,
    ) -> Result<bool, OpError> {
        if lean && chunkable && self.run_local_chunks::<T, C, U>(out, updates)? {
            return Ok(true);
        }
        // Whether it would run lean or bucketed (private folds are flat histograms).
        if self.plan.is_none()
            && self.private_foldable::<T, C>(out.len())
            && self.run_private_folds::<T, C, U>(out, updates)?
        {
            return Ok(true);
        }
        if lean {
            self.run_flat::<T, C, U>(out, updates)?;
        }
        Ok(lean)
    }

    /// [`ReduceKernel::run`], trying the lean pass in chunks ([`ElementsKernel::run_local_chunks`])
    /// only if `try_local`.
    pub(super) fn run_with<T: Elem, C: Combine<T>>(
        &self,
        out: &mut [T],
        updates: &[T],
        try_local: bool,
    ) -> Result<(), OpError> {
        if self.track_counts && self.indices.len() > u32::MAX as usize {
            return Err(OpError::new(
                codes::MEMORY,
                "more than 2^32 indices with counted reductions",
            ));
        }
        if self.line_indices {
            return match self.run_rows::<T, C>(out, updates)? {
                true => Ok(()),
                false => Err(OpError::new(
                    codes::INTERNAL,
                    "one index per line did not make a row scatter",
                )),
            };
        }
        if self.plan.is_none()
            && self.indices.len() >= PAR_MIN_ELEMENTS
            && self.geometry.rows_apply(out.len())
            && self.run_rows::<T, C>(out, updates)?
        {
            return Ok(());
        }
        let mut counts: Vec<u32> = if self.track_counts {
            try_zeroed(out.len())?
        } else {
            Vec::new()
        };
        let bucketed = self.bucketed(out.len(), std::mem::size_of_val(out));
        let lean = self.runs_lean(bucketed);
        let bucketed = bucketed && self.plan.is_none();
        let chunkable = lean && try_local && self.chunkable(std::mem::size_of::<T>());
        if self.run_lean_paths::<T, C, _>(out, updates, lean, chunkable)? {
            return Ok(());
        }
        if bucketed {
            if self.track_counts {
                self.run_bucketed::<T, C, true, _>(out, &mut counts, updates)?;
            } else {
                self.run_bucketed::<T, C, false, _>(out, &mut counts, updates)?;
            }
        } else {
            let o = DisjointSlice::new(out);
            let c = DisjointSlice::new(&mut counts);
            let init = self.use_init_val;
            if let Some(plan) = self.plan {
                if self.track_counts {
                    plan.apply::<T, C, true>(&o, &c, init, updates);
                } else {
                    plan.apply::<T, C, false>(&o, &c, init, updates);
                }
            } else {
                let tasks = self.tasks();
                par::try_for_each_task(tasks.len(), &|i| {
                    self.run_task::<T, C>(&tasks[i], &o.part(i), &c.part(i), updates)
                })?;
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
}
