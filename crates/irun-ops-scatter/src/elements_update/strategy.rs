//! Which way a run of ScatterElementsUpdate goes: one [`Strategy`], chosen by [`choose`] from
//! what is known before the kernel runs ([`Workload`]: the geometry, the element size,
//! counts, the thread count, and a sampled profile of the indices). No clock is read: the
//! same inputs on the same thread count always take the same way.
//!
//! The invariant every strategy keeps: each output element ends as its updates applied one
//! by one in position (row-major) order. The private folds and the local chunks' folded
//! runs apply them in another grouping, only on exact combines that are associative with an
//! identity, where the result is the same. So the choice changes the time, never the bits,
//! and the tests compare every strategy with the spec's sequential loop.
//!
//! To add a strategy: a variant here with the workloads it serves and the figures that
//! justify it, its case in [`choose`] and in the table test, and its run in
//! `ElementsKernel::execute`.

use crate::kernel::PAR_MIN_ELEMENTS;

/// One way to run the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Strategy {
    /// Lines of inner columns that hold one index each (torch's `index.expand`): one copy or
    /// fold per line (`rows.rs`). When some line's indices differ, the run takes what
    /// [`choose`] gives without the row shape.
    Rows,
    /// Constant indices whose offsets were computed and grouped at compile time (`plan.rs`).
    Planned,
    /// One task per stretch of outer rows or inner columns, which own disjoint outputs, or
    /// one task for shapes that split neither way (`runtime.rs`, `run_task`).
    Tasks,
    /// One pass of each update straight into its target on one task, no lists
    /// (`lean.rs`): flat histograms whose read-modify-writes stay in cache, or too few
    /// positions to share.
    Lean,
    /// Local indices (sorted, reverse-sorted, one target for all): the lean pass on one
    /// chunk of positions per thread over disjoint stretches of the output (`local.rs`;
    /// sorted chunks on an output filled as they go, `monotone.rs`). Spans that overlap
    /// run [`Strategy::Lean`].
    LocalChunks,
    /// Integer histograms on outputs of at most [`Tuning::PRIVATE_MAX_OUTPUT_BYTES`]: a chunk
    /// per thread folded into its own copy of the output, the copies joined after
    /// (`private.rs`). When the copies cannot be allocated, what [`choose`] gives without.
    PrivateFolds,
    /// Flat histograms on outputs of at most [`Tuning::SERIAL_MAX_OUTPUT_BYTES`] with many
    /// positions: each round shared between one task applying straight into the output and
    /// tasks listing the rest by bucket, applied after (`split.rs`).
    SplitRounds,
    /// Everything else that the row and column splits cannot share out (1-D-like shapes):
    /// rounds of positions partitioned into lists by bucket of targets, applied by bucket
    /// (`runtime.rs`, `run_bucketed`).
    Bucketed,
    /// [`Strategy::Bucketed`] in one round on an output larger than
    /// [`Tuning::ROUNDS_MAX_OUTPUT_BYTES`] that the op does not own: each bucket's task copies
    /// its stretch of the data just before applying its lists (`fused.rs`).
    FillByBucket,
}

/// Where a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Output {
    /// Into the data itself, which the op owns.
    InPlace,
    /// Into a new output, filled from the data by the run.
    Fresh,
    /// Into the data widened to f32, the f16 or bf16 updates widened a block at a time as
    /// they are read. Strategies that read the updates whole do not run so.
    Widened,
}

/// What [`choose`] knows of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Workload {
    pub(super) positions: usize,
    pub(super) out_len: usize,
    pub(super) elem_bytes: usize,
    pub(super) threads: usize,
    /// Hit counts are kept (mean, or `use_init_val=false`).
    pub(super) counted: bool,
    /// A compile-time plan of the indices exists.
    pub(super) planned: bool,
    /// One index per line of inner columns (the indices before a broadcast).
    pub(super) line_indices: bool,
    /// The shape is one the row path serves (`Geometry::rows_apply`).
    pub(super) rows: bool,
    /// One row, one element per index along the axis: the output offset is the target.
    pub(super) flat: bool,
    /// One element per index along the axis in every outer row (`inner == 1`, the data's
    /// too), outer rows not remapped: the lean pass's shape.
    pub(super) lean_shape: bool,
    /// The outer rows or the inner columns are enough to give every thread a share.
    pub(super) splits: bool,
    /// The axis has no elements (every index is out of range).
    pub(super) empty_axis: bool,
    /// The combine folds apart: exact elements, associative with an identity
    /// (`folds_from_identity`).
    pub(super) folds_apart: bool,
    /// The indices are local ([`ElementsKernel::local`]: the median sampled block's targets
    /// span at most [`Tuning::LOCAL_SPAN_BYTES`]). Sampled only where it matters
    /// ([`Workload::samples_locality`]); `false` elsewhere.
    ///
    /// [`ElementsKernel::local`]: super::kernel::ElementsKernel::local
    pub(super) local: bool,
}

/// Every tuning constant of ScatterElementsUpdate's strategies, each with its reason: first
/// those of the choice, then, by the file that uses it, those of the loops. Measured on
/// 2-core VMs (AMD EPYC Zen 3 and 4, Intel Xeon), 16M updates unless said; dated figures
/// are in docs/benchmarks.md and docs/reductions-performance.md.
pub(super) struct Tuning;

impl Tuning {
    /// Fewer positions than this run in one lean pass: sampling, lists and chunks do not pay.
    pub(super) const BUCKETED_MIN_INDICES: usize = 1 << 18;
    /// A flat histogram's output up to this size keeps its read-modify-writes in cache, so a
    /// lean pass beats partitioning (4 MB f32: 20 ms lean, 31-35 bucketed on the EPYC);
    /// larger ones go bucketed (32 MB i32: 160 ms lean, 54 bucketed).
    pub(super) const SERIAL_MAX_OUTPUT_BYTES: usize = 8 << 20;
    /// Split rounds pay from four rounds of positions; fewer run lean.
    pub(super) const SPLIT_MIN_POSITIONS: usize = 4 * Self::ROUND_POSITIONS;
    /// Larger outputs run bucketed in one round (32 MB i32 max: 31 ms in one, 43 in rounds).
    pub(super) const ROUNDS_MAX_OUTPUT_BYTES: usize = 16 << 20;
    /// Private copies beyond this double what the random read-modify-writes reach (1M i64:
    /// 92-101 ms in folds against 72-92 in split rounds; 250K i32: 23 against 34).
    pub(super) const PRIVATE_MAX_OUTPUT_BYTES: usize = 1 << 20;
    /// Indices count as local when the median sampled block's targets span at most this.
    pub(super) const LOCAL_SPAN_BYTES: usize = 64 << 10;
    /// Inner columns per thread below which a column split is not worth its tasks.
    pub(super) const MIN_COLUMNS_PER_TASK: usize = 64;

    /// How many positions (or listed pairs) ahead the loops on outputs beyond the caches ask
    /// for a target's line: 64 took random applies onto 8 MB from 4.5 to 1.3 ns each where 16
    /// took them to 2.0 (stand-alone, one thread).
    pub(super) const FAR_AHEAD: usize = 64;

    /// The most buckets of a bucketed round: a bucket is a `u8` in the maps' tables, and a
    /// part's 64 list cursors stay in L1 while pass 1 writes them.
    pub(super) const MAX_BUCKETS: usize = 64;

    /// Positions per round of
    /// [`ElementsKernel::run_bucketed`](super::kernel::ElementsKernel::run_bucketed): its lists (8
    /// MiB for 4-byte updates) and the round's indices and updates stay in a 32 MiB L3. (Measured
    /// on a 2-core EPYC: 2^20 is best for a 4 MiB histogram; 2^19 is 2.5x slower.)
    pub(super) const ROUND_POSITIONS: usize = 1 << 20;

    /// The list bytes a round of
    /// [`ElementsKernel::run_bucketed`](super::kernel::ElementsKernel::run_bucketed) may write, at
    /// most: 2^20 8-byte pairs. With 12-byte pairs (f64, i64) rounds of 2^19 positions, whose lists
    /// stay in the L3 beside an 8 MB output, ran 16M sums 9-12% faster than rounds of 2^20 (Zen 4,
    /// 2 threads: f64 uniform 25.13 to 22.21 ms, skewed 25.19 to 22.68, i64 uniform 24.79 to 22.56;
    /// 2^18 22.94, 2^21 26.31).
    pub(super) const ROUND_LIST_BYTES: usize = 8 << 20;

    /// Positions per round of
    /// [`ElementsKernel::run_bucketed`](super::kernel::ElementsKernel::run_bucketed) for pairs of
    /// `pair_bytes`: [`Tuning::ROUND_POSITIONS`], halved while the round's pairs exceed
    /// [`Tuning::ROUND_LIST_BYTES`] (down to a quarter of it).
    pub(super) fn round_positions(pair_bytes: usize) -> usize {
        let mut len = Self::ROUND_POSITIONS;
        while len > Self::ROUND_POSITIONS / 4
            && len.saturating_mul(pair_bytes) > Self::ROUND_LIST_BYTES
        {
            len /= 2;
        }
        len
    }

    /// Output bytes per bucket that keep pass 2's read-modify-writes in cache.
    pub(super) const BUCKET_BYTES: usize = 1 << 20;

    /// Outputs up to this size run in two buckets on two threads: the two-bucket writer
    /// ([`super::buckets::TwoLists`]) has no branch and keeps its cursors in registers, which
    /// gains more in pass 1 than smaller buckets gain in pass 2.
    pub(super) const TWO_BUCKETS_MAX_BYTES: usize = 8 << 20;

    /// Buckets: one per thread at least, more when the output is larger than
    /// [`Tuning::BUCKET_BYTES`] per bucket, and at most [`Tuning::MAX_BUCKETS`]; two on two threads
    /// up to [`Tuning::TWO_BUCKETS_MAX_BYTES`]. Measured on a 2-core Xeon (2 MiB L2 per core),
    /// 2026-11-23, with 16M updates onto a 4 MiB f32 histogram: 38 ms in two buckets, 47 in four;
    /// 8M i32 maxima onto 32 MiB: 27 ms in 32 buckets, 33 in 8.
    pub(super) fn bucket_count(out_bytes: usize, threads: usize) -> usize {
        if threads == 2 && out_bytes <= Self::TWO_BUCKETS_MAX_BYTES {
            return 2;
        }
        threads
            .max(out_bytes.div_ceil(Self::BUCKET_BYTES))
            .min(Self::MAX_BUCKETS)
    }

    // buckets.rs

    /// How many pairs ahead of a list's end [`ManyLists`](super::buckets::ManyLists) fetches the
    /// line it will write.
    pub(super) const LIST_AHEAD: usize = 64;

    /// Fine ranges of axis targets that [`BucketMap`](super::buckets::BucketMap) groups into
    /// buckets: its table stays in L1.
    pub(super) const FINE_RANGES: usize = 4096;

    /// A bucket's stretch of output from which [`apply_pairs`](super::buckets::apply_pairs) asking
    /// ahead pays.
    pub(super) const FAR_BUCKET_BYTES: usize = 3 << 20;

    // kernel.rs

    /// Blocks of [`Tuning::SAMPLE_BLOCK`] positions per round that
    /// [`BucketMap`](super::buckets::BucketMap)'s counts come from: 8192 of a round's 2^20
    /// positions, enough to see a hot range, a few microseconds to read.
    pub(super) const SAMPLE_BLOCKS: usize = 64;

    /// Positions per sampled block: two cache lines of i64 indices.
    pub(super) const SAMPLE_BLOCK: usize = 128;

    // lean.rs

    /// Outputs from this size on lie mostly outside the core's caches, where the plain lean loop
    /// waits on each target's line: it asks for the targets [`Tuning::FAR_AHEAD`] positions ahead.
    /// The lean task of the 16M f64 sum's split rounds (8 MB output, uniform indices) went from
    /// 2.8-3.7 to 2.5-3.1 ns a position (three traced runs of each). Not from 4 MB: the f32 sums'
    /// lean task went from 2.0 to 1.75 on uniform indices but from 1.00 to 1.08 with half of them
    /// on 8 hot targets, whose lines stay in cache anyway.
    pub(super) const FAR_OUTPUT_BYTES: usize = 6 << 20;

    /// A block whose three sampled targets are in order and span at most this many bytes of
    /// output is sorted or reverse-sorted, read in order by the hardware's own prefetch: the
    /// far loop does not ask for its targets.
    pub(super) const ORDERED_SPAN_BYTES: u64 = 256 << 10;

    /// How many positions ahead the lean loops ask for their indices and updates. The hardware's
    /// stream prefetch alone left the loop waiting on those loads (perf: the updates' loads were
    /// its hottest instructions): 8M sorted i32 maxima on 2 threads (Zen 4) 5.98 to 5.32 ms,
    /// reversed 6.41 to 5.83 (medians of 4-5 alternating runs); 256 and 512 no better. Not in
    /// `lean.rs`'s `flat_runs`, where it slowed 16M sorted f32 sums onto 1M targets (8.57 to 9.36).
    pub(super) const LEAN_AHEAD: usize = 128;

    // local.rs

    /// How far [`ElementsKernel::chunk_bounds`](super::kernel::ElementsKernel::chunk_bounds) moves
    /// a chunk boundary to find a change of target: past a run of equal targets this long (all
    /// indices equal, say) there is no split, unless the chunk can fold the run apart; and a
    /// chunk's leading run at least this long is folded apart
    /// ([`ElementsKernel::local_chunk`](super::kernel::ElementsKernel::local_chunk)).
    pub(super) const SPLIT_SCAN: usize = 4096;

    // plan.rs

    /// Fewer indices than this are not worth a plan (the run-time kernel validates them in less
    /// time than the plan's memory costs).
    pub(super) const PLAN_MIN_INDICES: usize = 1 << 18;

    /// Output bytes per bucket when the updates are stored in entry order: half a 1 MiB L2, so a
    /// bucket's read-modify-writes hit the cache. (Measured on the 2-core EPYC: 2 to 32 buckets
    /// of a 4 MiB histogram apply in the same 9-10 ms; more buckets balance skewed indices.)
    pub(super) const SORTED_BUCKET_BYTES: usize = 512 << 10;

    /// The most buckets of a plan.
    pub(super) const PLAN_MAX_BUCKETS: usize = 1024;

    // rows.rs

    /// Inner columns a line needs for the row path to pay (and for the per-row list entry to be
    /// small beside the row it moves).
    pub(super) const ROW_MIN_COLUMNS: usize = 8;

    /// Output bytes per bucket of pass 2: its rows stay in a core's L2.
    pub(super) const ROW_BUCKET_BYTES: usize = 1 << 20;

    /// How many list entries ahead the apply pass fetches the update row it will read.
    pub(super) const ROW_AHEAD: usize = 16;

    /// At most this many buckets (lists per part).
    pub(super) const ROW_MAX_BUCKETS: usize = 256;

    // split.rs

    /// Positions per block of a split round: the unit the tasks claim. A lean block takes
    /// about 15 us on a 4 MB output, so the tasks finish within that of each other.
    pub(super) const CLAIM_BLOCK: usize = 4096;
}

impl Workload {
    fn out_bytes(&self) -> usize {
        self.out_len.saturating_mul(self.elem_bytes)
    }

    /// Whether the choice reads [`Workload::local`]: flat, several threads, enough positions.
    pub(super) fn samples_locality(&self) -> bool {
        self.flat && self.threads > 1 && self.positions >= Tuning::BUCKETED_MIN_INDICES
    }

    /// Large work on a shape the row and column splits cannot share out, on an output small
    /// enough for 32-bit offsets. Not local indices on a flat histogram (they stream through
    /// the output lean), nor a small flat output with counts or too few positions for split
    /// rounds (its read-modify-writes stay in cache).
    fn bucketed(&self) -> bool {
        let small = self.flat && self.out_bytes() <= Tuning::SERIAL_MAX_OUTPUT_BYTES;
        let unsplit = small && (self.counted || self.positions < Tuning::SPLIT_MIN_POSITIONS);
        let streams = self.flat && self.local;
        if unsplit || streams || self.empty_axis || self.splits {
            return false;
        }
        self.threads > 1
            && self.positions >= Tuning::BUCKETED_MIN_INDICES
            && self.out_len <= u32::MAX as usize
    }

    fn split_rounds(&self) -> bool {
        !self.counted
            && self.flat
            && self.out_bytes() <= Tuning::SERIAL_MAX_OUTPUT_BYTES
            && self.positions >= Tuning::SPLIT_MIN_POSITIONS
    }

    fn private_folds(&self) -> bool {
        self.folds_apart
            && !self.counted
            && !self.planned
            && self.threads > 1
            && self.flat
            && self.out_bytes() <= Tuning::PRIVATE_MAX_OUTPUT_BYTES
            && self.positions >= self.out_len.max(Tuning::BUCKETED_MIN_INDICES)
    }
}

/// The strategy for `w` writing to `output`.
pub(super) fn choose(w: &Workload, output: Output) -> Strategy {
    if w.line_indices || (!w.planned && w.positions >= PAR_MIN_ELEMENTS && w.rows) {
        return Strategy::Rows;
    }
    let bucketed = w.bucketed() && !w.planned;
    if output == Output::Fresh
        && bucketed
        && w.flat
        && !w.counted
        && w.out_bytes() > Tuning::ROUNDS_MAX_OUTPUT_BYTES
    {
        return Strategy::FillByBucket;
    }
    // The lean pass serves one element per index along the axis, without counts or plan,
    // where the work does not go bucketed.
    let lean = w.lean_shape && !w.counted && !w.planned && !bucketed;
    if lean && w.samples_locality() && w.local {
        return Strategy::LocalChunks;
    }
    if w.private_folds() {
        return Strategy::PrivateFolds;
    }
    if lean {
        return Strategy::Lean;
    }
    if bucketed {
        return match w.split_rounds() {
            true => Strategy::SplitRounds,
            false => Strategy::Bucketed,
        };
    }
    if w.planned {
        return Strategy::Planned;
    }
    Strategy::Tasks
}

impl Strategy {
    /// What runs when this strategy finds at run time that it cannot: rows whose indices
    /// differ, local chunks whose spans overlap, private copies that cannot be allocated.
    pub(super) fn instead(self, w: &Workload, output: Output) -> Strategy {
        match self {
            Strategy::Rows => choose(
                &Workload {
                    rows: false,
                    line_indices: false,
                    ..*w
                },
                output,
            ),
            Strategy::LocalChunks => Strategy::Lean,
            Strategy::PrivateFolds => choose(
                &Workload {
                    folds_apart: false,
                    ..*w
                },
                output,
            ),
            other => other,
        }
    }

    /// Whether the strategy reads the updates a block at a time, as [`Output::Widened`]
    /// runs need.
    pub(super) fn reads_by_block(self) -> bool {
        matches!(
            self,
            Strategy::Lean
                | Strategy::LocalChunks
                | Strategy::PrivateFolds
                | Strategy::SplitRounds
                | Strategy::Bucketed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1-D histogram of `positions` updates onto `out_len` elements of `elem_bytes`, on
    /// two threads, scattered indices.
    fn histogram(positions: usize, out_len: usize, elem_bytes: usize) -> Workload {
        Workload {
            positions,
            out_len,
            elem_bytes,
            threads: 2,
            counted: false,
            planned: false,
            line_indices: false,
            rows: false,
            flat: true,
            lean_shape: true,
            splits: false,
            empty_axis: false,
            folds_apart: false,
            local: false,
        }
    }

    const M: usize = 1 << 20;

    /// The benchmark's workloads and their neighbours, each with the strategy it gets.
    #[test]
    fn the_choice_for_each_kind_of_workload() {
        use Output::*;
        use Strategy::*;
        let f32_sum = histogram(16 * M, M, 4);
        let i32_sum_250k = Workload {
            folds_apart: true,
            ..histogram(16 * M, 250_000, 4)
        };
        let i32_max_8m = Workload {
            folds_apart: true,
            ..histogram(8 * M, 8 * M, 4)
        };
        let sorted = Workload {
            local: true,
            ..i32_max_8m
        };
        let rows_2d = Workload {
            rows: true,
            flat: false,
            lean_shape: false,
            splits: true,
            ..histogram(32 * M, 2 * M, 4)
        };
        let mean_rows = Workload {
            counted: true,
            ..rows_2d
        };
        let table: &[(&str, Workload, Output, Strategy)] = &[
            ("f32 sum 16M onto 1M", f32_sum, InPlace, SplitRounds),
            ("the same, widened halves", f32_sum, Widened, SplitRounds),
            ("the same, few positions", histogram(M, M, 4), InPlace, Lean),
            (
                "the same, one thread",
                Workload {
                    threads: 1,
                    ..f32_sum
                },
                InPlace,
                Lean,
            ),
            (
                "the same, counted",
                Workload {
                    counted: true,
                    ..f32_sum
                },
                InPlace,
                Tasks,
            ),
            (
                "f64 sum onto 8 MB",
                histogram(16 * M, M, 8),
                InPlace,
                SplitRounds,
            ),
            (
                "f64 sum onto 16 MB",
                histogram(16 * M, 2 * M, 8),
                InPlace,
                Bucketed,
            ),
            ("i32 sum onto 250K", i32_sum_250k, InPlace, PrivateFolds),
            ("i32 max onto 32 MB, owned", i32_max_8m, InPlace, Bucketed),
            (
                "i32 max onto 32 MB, shared data",
                i32_max_8m,
                Fresh,
                FillByBucket,
            ),
            ("sorted i32 max", sorted, Fresh, LocalChunks),
            (
                "sorted, widened",
                Workload {
                    elem_bytes: 4,
                    ..sorted
                },
                Widened,
                LocalChunks,
            ),
            ("rows of one index", rows_2d, InPlace, Rows),
            ("mean over rows", mean_rows, InPlace, Rows),
            (
                "planned rows",
                Workload {
                    planned: true,
                    ..rows_2d
                },
                InPlace,
                Planned,
            ),
            (
                "planned histogram",
                Workload {
                    planned: true,
                    ..f32_sum
                },
                InPlace,
                Planned,
            ),
            (
                "columns to split",
                Workload {
                    rows: false,
                    ..rows_2d
                },
                InPlace,
                Tasks,
            ),
            (
                "empty axis",
                Workload {
                    empty_axis: true,
                    ..f32_sum
                },
                InPlace,
                Lean,
            ),
            (
                "line indices",
                Workload {
                    line_indices: true,
                    ..histogram(16, 4, 4)
                },
                InPlace,
                Rows,
            ),
        ];
        for &(case, w, output, want) in table {
            assert_eq!(choose(&w, output), want, "{case}");
        }
    }

    /// Rows that turn out not to be rows, overlapping local chunks and unallocated private
    /// copies each give way to a strategy that always runs.
    #[test]
    fn what_runs_instead() {
        let rows = Workload {
            rows: true,
            flat: false,
            lean_shape: false,
            splits: true,
            ..histogram(4 * M, M, 4)
        };
        assert_eq!(choose(&rows, Output::InPlace), Strategy::Rows);
        assert_eq!(
            Strategy::Rows.instead(&rows, Output::InPlace),
            Strategy::Tasks
        );
        let local = Workload {
            local: true,
            ..histogram(16 * M, M, 4)
        };
        assert_eq!(
            Strategy::LocalChunks.instead(&local, Output::InPlace),
            Strategy::Lean
        );
        let ints = Workload {
            folds_apart: true,
            ..histogram(16 * M, 250_000, 4)
        };
        assert_eq!(
            Strategy::PrivateFolds.instead(&ints, Output::InPlace),
            Strategy::SplitRounds
        );
        for s in [Strategy::Lean, Strategy::Tasks, Strategy::Bucketed] {
            assert_eq!(s.instead(&ints, Output::InPlace), s);
        }
    }

    /// Widened runs read the updates by block; the strategies that read them whole do not
    /// take them (the caller widens the updates whole instead).
    #[test]
    fn which_strategies_read_by_block() {
        let whole = [
            Strategy::Rows,
            Strategy::Planned,
            Strategy::Tasks,
            Strategy::FillByBucket,
        ];
        for s in whole {
            assert!(!s.reads_by_block(), "{s:?}");
        }
        assert!(Strategy::SplitRounds.reads_by_block());
    }
}
