//! The run-time kernel's state ([`ElementsKernel`]: the indices, their geometry and what
//! the reduction keeps), and what every strategy shares: the row and column split of
//! [`crate::elements_update::strategy::Strategy::Tasks`], the sampled index profile, the
//! out-of-range error.

use std::ops::Range;

use super::buckets::BucketMap;
use super::geometry::{hit, Geometry, TaskSplit};
use super::plan::ElementsPlan;
use super::strategy::Tuning;
use crate::index_out_of_range;
use crate::kernel::{pieces, split_range, IndexValues, Part, PAR_MIN_ELEMENTS};
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};

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
        match g.task_split(threads) {
            Some(TaskSplit::Outer) => split_range(g.outer, pieces(g.outer, 1))
                .into_iter()
                .map(|outer| Task { outer, ..full() })
                .collect(),
            Some(TaskSplit::Inner) => {
                let columns = Tuning::MIN_COLUMNS_PER_TASK;
                split_range(g.inner, pieces(g.inner, columns))
                    .into_iter()
                    .map(|inner| Task { inner, ..full() })
                    .collect()
            }
            None => vec![full()],
        }
    }

    /// Whether consecutive positions target nearby elements (sorted or reverse-sorted
    /// indices, one target for all): then the lean pass streams through the output, in
    /// chunks of positions with disjoint target ranges where it can
    /// ([`ElementsKernel::run_local_chunks`]), which beats partitioning whatever the output's
    /// size (8M sorted i32 maxima on a 2-core Xeon: 9 ms in chunks, 14 ms in one pass, 34 ms
    /// bucketed). Judged from [`Tuning::SAMPLE_BLOCKS`] evenly spaced blocks of positions: the
    /// median block's targets span at most [`Tuning::LOCAL_SPAN_BYTES`] of output.
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
            .get(Tuning::SAMPLE_BLOCKS / 2)
            .is_some_and(|span| span.saturating_mul(elem_bytes) <= Tuning::LOCAL_SPAN_BYTES)
    }

    /// Updates per fine range of axis targets ([`BucketMap::fine`]) among [`Tuning::SAMPLE_BLOCKS`]
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

/// The [`Tuning::SAMPLE_BLOCKS`] evenly spaced blocks of [`Tuning::SAMPLE_BLOCK`] positions of `round` that
/// the samples read; none when the round is too short for them to lie apart.
fn sample_blocks(round: Range<usize>) -> impl Iterator<Item = Range<usize>> {
    let step = round.len() / Tuning::SAMPLE_BLOCKS;
    let blocks = if step < Tuning::SAMPLE_BLOCK {
        0
    } else {
        Tuning::SAMPLE_BLOCKS
    };
    (0..blocks).map(move |k| {
        let start = round.start + k * step;
        start..start + Tuning::SAMPLE_BLOCK
    })
}
