//! The lean pass on one chunk of positions per thread ([`ElementsKernel::run_local_chunks`]),
//! when the indices are local (sorted, reverse-sorted) and the chunks' target ranges do not
//! overlap, so that each thread owns its own stretch of the output. On integers a chunk may
//! also fold a long run of one target apart (all indices equal), so that such runs are
//! shared out too.

use std::ops::Range;

use super::kernel::ElementsKernel;
use super::lean::fold_all;
use super::strategy::Tuning;
use crate::kernel::{NativeBlocks, NativeIndex};
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};
use crate::updates::Updates;

impl ElementsKernel<'_> {
    /// The lean pass over one contiguous chunk of positions per thread, in parallel, when
    /// the chunks' target ranges are disjoint (sorted or reverse-sorted indices, after
    /// moving each boundary to a change of target): each chunk then owns the stretch of
    /// the output its targets span, and every element still sees its updates in position
    /// order, all of them coming from one chunk.
    ///
    /// On integers, whose combines (but `Sub`) are associative, a boundary that finds no
    /// change of target nearby (all indices equal, long runs) stays where it is: the chunk
    /// after it folds its leading run apart, in parallel with the others, and that fold is
    /// applied to the run's element once every chunk before it has run. So one target for
    /// all no longer runs on one thread (8M i32 maxima onto one element, 2 threads: 6.7 to
    /// 3.7 ms, medians of 8 alternating runs).
    ///
    /// `Ok(false)`, with nothing written, when the ranges overlap or an index is out of
    /// range (the lean pass then reports the first).
    pub(super) fn run_local_chunks<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Result<bool, OpError> {
        let Some(plan) = self.local_plan::<T, C, U>(updates) else {
            return Ok(false);
        };
        self.run_local_plan::<T, C, U>(plan, out, updates)?;
        Ok(true)
    }

    /// [`ElementsKernel::run_local_chunks`]'s chunks, or `None` when they may not run in
    /// parallel (their spans overlap, or an index is out of range).
    pub(super) fn local_plan<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        updates: &U,
    ) -> Option<LocalPlan<T>> {
        let fold_runs = T::EXACT && C::ASSOCIATIVE;
        let bounds = self.chunk_bounds(par::threads(), fold_runs)?;
        let mut chunks: Vec<Option<Chunk<T>>> = vec![None; bounds.len() - 1];
        par::for_each_mut(&mut chunks, &|i, chunk| {
            *chunk = self.local_chunk::<T, C, U>(bounds[i]..bounds[i + 1], fold_runs, updates);
        });
        let chunks = chunks.into_iter().collect::<Option<Vec<_>>>()?;
        if !disjoint(&chunks) {
            return None;
        }
        let leads = chunks.iter().filter_map(|c| c.lead).collect();
        let mut lean: Vec<(Range<usize>, Range<usize>)> = chunks
            .into_iter()
            .filter(|c| !c.span.is_empty())
            .map(|c| (c.positions, c.span))
            .collect();
        lean.sort_by_key(|(_, span)| span.start);
        Some(LocalPlan { lean, leads })
    }

    /// Runs `plan` on `out`, the data.
    pub(super) fn run_local_plan<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        plan: LocalPlan<T>,
        out: &mut [T],
        updates: &U,
    ) -> Result<(), OpError> {
        // Cut the output into the chunks' disjoint spans: plain `&mut` slices, one per task.
        let mut work = Vec::with_capacity(plan.lean.len());
        let (mut rest, mut at) = (&mut *out, 0);
        for (positions, span) in plan.lean {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(span.start - at);
            let (dst, tail) = tail.split_at_mut(span.len());
            (rest, at) = (tail, span.end);
            work.push((positions, span.start, dst));
        }
        par::try_for_each_mut(&mut work, &|_, (positions, base, dst)| {
            self.lean_range::<T, C, _>(dst, *base, positions.clone(), updates)
                .map_err(|e| (positions.start, e))
        })?;
        // In position order: each run's fold after everything before it.
        for (t, folded) in plan.leads {
            out[t] = C::apply(out[t], folded);
        }
        Ok(())
    }

    /// The chunk of `positions`: its leading run folded apart when `fold_runs` and it starts
    /// inside one (the target before it is its first target) or the run is long (at least
    /// [`Tuning::SPLIT_SCAN`]: all indices equal would otherwise leave the first chunk's whole lean
    /// pass to one thread), and the span of targets the rest reaches; `None` if an index is
    /// out of range.
    fn local_chunk<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        positions: Range<usize>,
        fold_runs: bool,
        updates: &U,
    ) -> Option<Chunk<T>> {
        let g = &self.geometry;
        let start = positions.start;
        let whole = |positions: Range<usize>| {
            let span = self.target_span(positions.clone())?;
            Some(Chunk {
                positions,
                span,
                lead: None,
            })
        };
        if !fold_runs || positions.is_empty() {
            return whole(positions);
        }
        let mut pair = [0i64; 2];
        let from = start.saturating_sub(1);
        self.indices
            .read(from..start + 1, &mut pair[1 - (start - from)..]);
        let t = g.target(pair[1]);
        if t >= g.data_along {
            return None;
        }
        let inside_run = start > 0 && g.target(pair[0]) == t;
        let (run_end, folded) = self.fold_run::<T, C, U>(positions.clone(), t, updates);
        if !inside_run && run_end - start < Tuning::SPLIT_SCAN {
            return whole(positions);
        }
        let rest = run_end..positions.end;
        let span = match rest.is_empty() {
            true => t..t,
            false => self.target_span(rest.clone())?,
        };
        Some(Chunk {
            positions: rest,
            span,
            lead: Some((t, folded)),
        })
    }

    /// The end of the run of positions from `positions.start` on whose target is `t`, and
    /// the fold of their updates from the first one on.
    fn fold_run<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        positions: Range<usize>,
        t: usize,
        updates: &U,
    ) -> (usize, T) {
        let mut widened = Vec::new();
        let acc = updates.block(positions.start, 1, &mut widened)[0];
        let mut run = RunFold::<T, C, U> {
            target: t,
            along: self.geometry.data_along,
            acc,
            end: positions.end,
            updates,
            widened,
            combine: std::marker::PhantomData,
        };
        let _ = self
            .indices
            .for_each_native(positions.start + 1..positions.end, &mut run);
        (run.end, run.acc)
    }

    /// `parts + 1` increasing chunk boundaries from 0 to the index count, each inner one
    /// the first position at or after an even split whose target differs from the one
    /// before it; with `fold_runs`, the even split itself where no change comes within
    /// [`Tuning::SPLIT_SCAN`] positions. `None` if some split finds no change and may not stay, or
    /// two boundaries meet.
    pub(super) fn chunk_bounds(&self, parts: usize, fold_runs: bool) -> Option<Vec<usize>> {
        let g = &self.geometry;
        let n = self.indices.len();
        let mut bounds = vec![0];
        let mut buf = vec![0i64; Tuning::SPLIT_SCAN + 1];
        for k in 1..parts {
            let split = k * n / parts;
            let end = (split + Tuning::SPLIT_SCAN).min(n);
            let vals = &mut buf[..end - split + 1];
            self.indices.read(split - 1..end, vals);
            let change = vals
                .windows(2)
                .position(|w| g.target(w[0]) != g.target(w[1]));
            let at = match change {
                Some(change) => split + change,
                None if fold_runs => split,
                None => return None,
            };
            if at <= *bounds.last()? {
                return None;
            }
            bounds.push(at);
        }
        bounds.push(n);
        Some(bounds)
    }

    /// The targets `positions` reach, as a range; `None` if one is out of range. From the
    /// least and greatest index when they have the same sign (one vectorised pass on the
    /// stored type); else target by target.
    fn target_span(&self, positions: Range<usize>) -> Option<Range<usize>> {
        let g = &self.geometry;
        let along = g.data_along as i64;
        let (lo, hi) = self.indices.min_max(positions.clone())?;
        if lo < -along || hi >= along {
            return None;
        }
        if lo >= 0 || hi < 0 {
            return Some(g.target(lo)..g.target(hi) + 1);
        }
        let (mut lo, mut hi) = (usize::MAX, 0);
        let _ = self.indices.for_each_block(positions, |_, vals| {
            for &v in vals {
                let t = g.target(v);
                (lo, hi) = (lo.min(t), hi.max(t));
            }
            Ok::<(), ()>(())
        });
        Some(lo..hi + 1)
    }
}

/// [`ElementsKernel::fold_run`]'s loop on each block of indices as stored: folds the
/// updates while every index names `target` (as itself or counted from the end), and stops
/// at the first that does not, its position in `end`.
struct RunFold<'u, T, C, U: ?Sized> {
    target: usize,
    along: usize,
    acc: T,
    end: usize,
    updates: &'u U,
    widened: Vec<T>,
    combine: std::marker::PhantomData<C>,
}

impl<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized> NativeBlocks for RunFold<'_, T, C, U> {
    type Error = ();

    fn block_len(&self) -> usize {
        self.updates.block_len()
    }

    fn block<V: NativeIndex>(&mut self, start: usize, vals: &[V]) -> Result<(), ()> {
        let (t, along) = (self.target, self.along);
        // The target's two spellings in the stored type (a spelling it cannot hold is
        // never stored): the test then runs on the values as stored, as many to a vector
        // as the type allows (8M i32 maxima onto one element, 2 threads: 4.24 to 3.58 ms,
        // medians of 8 alternating runs; the values had been widened to i64 blocks first).
        let spell = |v: i64| V::try_from(v).ok();
        let (a, b) = match (spell(t as i64), spell(t as i64 - along as i64)) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) | (None, Some(a)) => (a, a),
            (None, None) => {
                self.end = start;
                return Err(());
            }
        };
        let ups = self.updates.block(start, vals.len(), &mut self.widened);
        let names = |v: V| (v == a) | (v == b);
        // No short cut in the test, so that it vectorises.
        let same = irun_opkit::simd::widest(
            #[inline(always)]
            || vals.iter().fold(true, |same, &v| same & names(v)),
        );
        if same {
            self.acc = fold_all::<T, C>(self.acc, ups);
            return Ok(());
        }
        let k = vals.iter().position(|&v| !names(v)).unwrap_or(vals.len());
        self.acc = fold_all::<T, C>(self.acc, &ups[..k]);
        self.end = start + k;
        Err(())
    }
}

/// The chunks of [`ElementsKernel::run_local_chunks`] that may run in parallel: the
/// positions and target span of each chunk with a lean pass, by span, and the runs folded
/// apart (target and fold), in position order.
pub(super) struct LocalPlan<T> {
    lean: Vec<(Range<usize>, Range<usize>)>,
    leads: Vec<(usize, T)>,
}

/// One chunk of [`ElementsKernel::run_local_chunks`]: the positions its lean pass applies,
/// the stretch of targets they reach, and the leading run it folded apart, if any (its
/// target and the fold of its updates).
#[derive(Clone)]
struct Chunk<T> {
    positions: Range<usize>,
    span: Range<usize>,
    lead: Option<(usize, T)>,
}

/// Whether the chunks (in position order) may run in parallel: their spans do not overlap,
/// and no chunk's span holds the target of a run folded apart by it or a chunk before it
/// (that run's fold is applied after all the lean passes, so every update the target gets
/// in the lean passes must come before the run).
fn disjoint<T>(chunks: &[Chunk<T>]) -> bool {
    let mut spans: Vec<&Range<usize>> = chunks
        .iter()
        .map(|c| &c.span)
        .filter(|s| !s.is_empty())
        .collect();
    spans.sort_by_key(|s| s.start);
    if spans.windows(2).any(|w| w[0].end > w[1].start) {
        return false;
    }
    chunks.iter().enumerate().all(|(i, c)| match c.lead {
        Some((t, _)) => chunks[i..].iter().all(|later| !later.span.contains(&t)),
        None => true,
    })
}
