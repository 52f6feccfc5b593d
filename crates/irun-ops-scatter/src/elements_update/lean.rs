//! The lean pass: each update applied straight to its target, in position order, with no
//! lists and no counts. [`ElementsKernel::run_flat`] runs it on one task;
//! [`ElementsKernel::run_local_chunks`] on one chunk of positions per thread, when the indices
//! are local (sorted, reverse-sorted) and the chunks' target ranges do not overlap, so that
//! each thread owns its own stretch of the output. On integers a chunk may also fold a long
//! run of one target apart (all indices equal), so that such runs are shared out too.
//! [`ElementsKernel::run_monotone_into`] runs sorted and reverse-sorted indices on an output
//! filled from data the op does not own, each chunk's piece of it known from where the
//! chunks start, without the planning pass over every index.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use super::runtime::ElementsKernel;
use crate::fill::{FillFrom, Span, Window};
use crate::kernel::{NativeBlocks, NativeIndex};
use crate::op::{codes, OpError};
use crate::par;
use crate::reduce::{Combine, Elem};
use crate::updates::Updates;

/// How far [`ElementsKernel::chunk_bounds`] moves a chunk boundary to find a change of
/// target: past a run of equal targets this long (all indices equal, say) there is no split,
/// unless the chunk can fold the run apart; and a chunk's leading run at least this long is
/// folded apart ([`ElementsKernel::local_chunk`]).
const SPLIT_SCAN: usize = 4096;

impl ElementsKernel<'_> {
    /// One task, one element per index along the axis (`inner == 1`), no counts: the
    /// plainest loop, on a plain slice. Index-bound checks double as the validation.
    pub(super) fn run_flat<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Result<(), OpError> {
        let g = &self.geometry;
        for o in 0..g.outer {
            let dst = &mut out[o * g.data_along..(o + 1) * g.data_along];
            let row = o * g.along;
            self.lean_range::<T, C, _>(dst, 0, row..row + g.along, updates)?;
        }
        Ok(())
    }

    /// The lean loop over `positions` of one flat row onto `dst`, which holds the row's
    /// targets `base..base + dst.len()`. Reports the first index out of range.
    pub(super) fn lean_range<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        dst: &mut [T],
        base: usize,
        positions: Range<usize>,
        updates: &U,
    ) -> Result<(), OpError> {
        let mut blocks = LeanBlocks::<T, C, U> {
            kernel: self,
            dst,
            base,
            updates,
            widened: Vec::new(),
            combine: std::marker::PhantomData,
        };
        self.indices.for_each_native(positions, &mut blocks)
    }

    /// Whether [`ElementsKernel::run_local_chunks`] may pay: several threads, enough indices,
    /// a single flat row (the output offset is the axis target) and local indices.
    pub(super) fn chunkable(&self, elem_bytes: usize) -> bool {
        par::threads() > 1
            && self.indices.len() >= super::runtime::BUCKETED_MIN_INDICES
            && self.geometry.single_flat_row()
            && self.local(elem_bytes)
    }

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

    /// Chunks of positions whose pieces of the output follow from the targets they start
    /// at, without reading every index first: when each boundary lies at a change of
    /// target and the chunks' first targets rise (or fall) from chunk to chunk, as they do
    /// for sorted (reverse-sorted) indices, chunk `k`'s piece runs from its first target up
    /// to the next chunk's (down to, reversed), the first and last pieces reaching the ends
    /// of the output. `None` when the first targets are not strictly monotone, a boundary
    /// finds no change of target, or a first index is out of range.
    pub(super) fn monotone_chunks(&self) -> Option<MonotoneChunks> {
        let g = &self.geometry;
        let n = g.data_along;
        let bounds = self.chunk_bounds(par::threads(), false)?;
        let parts = bounds.len() - 1;
        let mut firsts = Vec::with_capacity(parts);
        for &b in &bounds[..parts] {
            let mut v = [0i64];
            self.indices.read(b..b + 1, &mut v);
            let t = g.target(v[0]);
            if t >= n {
                return None;
            }
            firsts.push(t);
        }
        let rising = firsts.windows(2).all(|w| w[0] < w[1]);
        if !rising && !firsts.windows(2).all(|w| w[0] > w[1]) {
            return None;
        }
        let pieces = (0..parts)
            .map(|k| {
                let (first, next) = (firsts[k], firsts.get(k + 1).copied());
                let (lo, hi) = match rising {
                    true => (if k == 0 { 0 } else { first }, next.unwrap_or(n)),
                    false => (
                        next.map_or(0, |t| t + 1),
                        if k == 0 { n } else { first + 1 },
                    ),
                };
                lo..hi
            })
            .collect();
        Some(MonotoneChunks {
            positions: bounds.windows(2).map(|w| w[0]..w[1]).collect(),
            pieces,
        })
    }

    /// Runs monotone chunks on an output filled from the data as the lean passes reach it,
    /// each chunk's task on its own piece ([`WindowBlocks`]). A chunk whose indices leave
    /// its piece (they were not sorted after all) stops there; once every piece is whole
    /// the output is copied from the data again and handed back, `Some`, for the caller to
    /// run the scatter on as if just copied (which also reports the first index out of
    /// range in that case).
    pub(super) fn run_monotone_into<'o, T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        chunks: MonotoneChunks,
        out: FillFrom<'o, T>,
        updates: &U,
    ) -> Result<Option<&'o mut [T]>, OpError> {
        let mut order: Vec<usize> = (0..chunks.pieces.len()).collect();
        order.sort_by_key(|&k| chunks.pieces[k].start);
        let lengths: Vec<usize> = order.iter().map(|&k| chunks.pieces[k].len()).collect();
        let src = out.src();
        let strayed = AtomicBool::new(false);
        let (done, whole) = out.in_pieces(lengths, |pieces| {
            let mut work: Vec<_> = pieces
                .into_iter()
                .zip(&order)
                .map(|(piece, &k)| {
                    let base = chunks.pieces[k].start;
                    Some((piece, chunks.positions[k].clone(), base))
                })
                .collect();
            par::try_for_each_mut(&mut work, &|_, task| {
                let Some((piece, positions, base)) = task.take() else {
                    return Ok(());
                };
                let start = positions.start;
                let mut blocks = WindowBlocks::<T, C, U>::new(self, piece, base, updates);
                let done = self.indices.for_each_native(positions, &mut blocks);
                // Whatever happened, so that the output is whole to start again on.
                blocks.window.finish();
                if blocks.strayed {
                    strayed.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                done.map_err(|e| (start, e))
            })
        });
        if !strayed.load(Ordering::Relaxed) {
            return done.map(|()| None);
        }
        let Some(values) = whole else {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: a scatter chunk left its piece unwritten",
            ));
        };
        par::copy(values, src);
        Ok(Some(values))
    }

    /// The chunk of `positions`: its leading run folded apart when `fold_runs` and it starts
    /// inside one (the target before it is its first target) or the run is long (at least
    /// [`SPLIT_SCAN`]: all indices equal would otherwise leave the first chunk's whole lean
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
        if !inside_run && run_end - start < SPLIT_SCAN {
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
    /// [`SPLIT_SCAN`] positions. `None` if some split finds no change and may not stay, or
    /// two boundaries meet.
    fn chunk_bounds(&self, parts: usize, fold_runs: bool) -> Option<Vec<usize>> {
        let g = &self.geometry;
        let n = self.indices.len();
        let mut bounds = vec![0];
        let mut buf = vec![0i64; SPLIT_SCAN + 1];
        for k in 1..parts {
            let split = k * n / parts;
            let end = (split + SPLIT_SCAN).min(n);
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

/// The lean loop of [`ElementsKernel::lean_range`] on each block of indices as stored:
/// i32 indices are not widened into a buffer first, and i32 and i64 blocks are slices of
/// 4096 (a 2-core Xeon, medians of 6 alternating runs: 8M sorted and reverse-sorted i32
/// maxima 5% and 9% faster, 16M such i64 sums 10% and 16%; the widening was 13% of the
/// maxima's time).
struct LeanBlocks<'k, 'a, 'd, T, C, U: ?Sized> {
    kernel: &'k ElementsKernel<'a>,
    dst: &'d mut [T],
    base: usize,
    updates: &'k U,
    /// A block's updates when they are stored narrower than `T` ([`Updates::block`]).
    widened: Vec<T>,
    combine: std::marker::PhantomData<C>,
}

impl<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized> NativeBlocks
    for LeanBlocks<'_, '_, '_, T, C, U>
{
    type Error = OpError;

    fn block<V: NativeIndex>(&mut self, start: usize, vals: &[V]) -> Result<(), OpError> {
        let (k, along) = (self.kernel, self.kernel.geometry.data_along);
        let ups = self.updates.block(start, vals.len(), &mut self.widened);
        lean_block::<T, C, V>(self.dst, along, self.base, vals, ups)
            .map_err(|i| k.lean_error(start + i, vals[i].into()))
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

/// [`LeanBlocks`] on a [`Window`] of the output: each block first asks the window for the
/// targets between its first and last index (all of them when sorted or reverse-sorted),
/// which copies the data there if it is not yet; a block that reaches past them then asks
/// for the whole piece from the first index outside. Either way every update is applied
/// once, in position order.
struct WindowBlocks<'k, 'a, 'w, T, C, U: ?Sized> {
    kernel: &'k ElementsKernel<'a>,
    window: Window<'w, T>,
    /// The axis target of the piece's first element.
    base: usize,
    updates: &'k U,
    /// A block's updates when they are stored narrower than `T` ([`Updates::block`]).
    widened: Vec<T>,
    /// Set when an index in range targets an element outside the piece.
    strayed: bool,
    combine: std::marker::PhantomData<C>,
}

impl<'k, 'a, 'w, T: Elem, C: Combine<T>, U: Updates<T> + ?Sized> WindowBlocks<'k, 'a, 'w, T, C, U> {
    fn new(
        kernel: &'k ElementsKernel<'a>,
        piece: FillFrom<'w, T>,
        base: usize,
        updates: &'k U,
    ) -> Self {
        WindowBlocks {
            kernel,
            window: piece.window(),
            base,
            updates,
            widened: Vec::new(),
            strayed: false,
            combine: std::marker::PhantomData,
        }
    }
}

impl<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized> NativeBlocks
    for WindowBlocks<'_, '_, '_, T, C, U>
{
    type Error = OpError;

    fn block<V: NativeIndex>(&mut self, start: usize, vals: &[V]) -> Result<(), OpError> {
        let (k, along) = (self.kernel, self.kernel.geometry.data_along);
        let (Some(&first), Some(&last)) = (vals.first(), vals.last()) else {
            return Ok(());
        };
        let ups = self.updates.block(start, vals.len(), &mut self.widened);
        let len = self.window.len();
        let (a, b) = (
            k.geometry.target(first.into()),
            k.geometry.target(last.into()),
        );
        let (lo, hi) = (a.min(b), a.max(b));
        let whole = 0..len;
        let guess = match lo >= self.base && hi < self.base + len && hi < along {
            true => lo - self.base..hi + 1 - self.base,
            false => whole.clone(),
        };
        let base = self.base + guess.start;
        let done = lean_block::<T, C, V>(self.window.span(guess.clone()), along, base, vals, ups);
        let done = match done {
            Err(i) if guess != whole => {
                let (vals, ups) = (&vals[i..], &ups[i..]);
                let dst = self.window.span(whole);
                lean_block::<T, C, V>(dst, along, self.base, vals, ups).map_err(|j| i + j)
            }
            done => done,
        };
        done.map_err(|i| {
            let v: i64 = vals[i].into();
            self.strayed |= k.geometry.target(v) < along;
            k.lean_error(start + i, v)
        })
    }
}

/// The lean loop over one block of indices `vals` and their updates `ups` onto `dst`, which
/// holds targets `base..` of an axis of `along`: each update applied to its target in
/// order. On the first index out of range or outside `dst`, its place in the block, every
/// update before it applied and none from it on.
#[inline(always)]
fn lean_block<T: Elem, C: Combine<T>, V: NativeIndex>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
) -> Result<(), usize> {
    let n = vals.len();
    if n == 0 {
        return Ok(());
    }
    // A block whose first, middle and last index are equal is likely one long run of one
    // target (a hot target, sorted indices with many duplicates): it keeps the run's
    // element in a register, one dependent apply per update instead of a store and a
    // reload (16M updates to one element: 15 ms against 56). Others take the plain loop,
    // which carrying a run would slow down by half, and so would counting runs first.
    // Either way the same applies in the same order.
    // So is a block whose three samples are in order and that spans a quarter as many
    // targets as it has positions: sorted indices with runs of duplicates (16M sorted onto
    // 1M targets: runs of 16).
    let (first, mid, last): (i64, i64, i64) =
        (vals[0].into(), vals[n / 2].into(), vals[n - 1].into());
    let ordered = (first <= mid && mid <= last) || (first >= mid && mid >= last);
    let dense = first.abs_diff(last).saturating_mul(4) <= n as u64;
    let runny = n > 2 && ordered && dense;
    // Without wrapping first: four instructions a position fewer, a third of the loop's
    // time (8M sorted i32 maxima on a 2-core Xeon).
    plain_then_wrapping(|wrap, k| {
        let (vals, ups) = (&vals[k..], &ups[k..]);
        match (runny, wrap) {
            (true, false) => flat_runs::<T, C, V, false>(dst, along, base, vals, ups),
            (true, true) => flat_runs::<T, C, V, true>(dst, along, base, vals, ups),
            (false, false) => flat_plain::<T, C, V, false>(dst, along, base, vals, ups),
            (false, true) => flat_plain::<T, C, V, true>(dst, along, base, vals, ups),
        }
    })
}

impl ElementsKernel<'_> {
    /// The error for index value `v` at `pos`, where a lean loop stopped: out of range, or
    /// (an internal error) in range but outside the stretch of output the loop was given.
    fn lean_error(&self, pos: usize, v: i64) -> OpError {
        if self.geometry.target(v) < self.geometry.data_along {
            OpError::new(codes::INTERNAL, "a scatter chunk left its output span")
        } else {
            self.out_of_range(pos, v)
        }
    }
}

/// [`ElementsKernel::monotone_chunks`]: chunk `k` applies `positions[k]` to `pieces[k]`,
/// the pieces tiling the output (in chunk order when rising, reversed when falling).
pub(super) struct MonotoneChunks {
    positions: Vec<Range<usize>>,
    pieces: Vec<Range<usize>>,
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

/// The lean loop over one block: each update applied to its target, `dst` holding the
/// targets from `base` on of an axis of `along`; the place in the block of the first index
/// out of range or outside `dst`, if any, or with `WRAP` false the first negative one.
/// Four positions at a time, their places tested together (one branch, no per-update
/// bounds test): 8M sorted i32 maxima on 2 threads 10.86 to 9.97 ms, reversed 11.43 to
/// 10.15 (medians of 7 alternating runs). The applies stay in position order; a group
/// with a bad place leaves the rest to the one-at-a-time loop, which finds it.
#[inline(always)]
fn flat_plain<T: Elem, C: Combine<T>, V: NativeIndex, const WRAP: bool>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
) -> Result<(), usize> {
    let len = dst.len();
    let mut done = 0;
    for (vs, us) in vals.chunks_exact(4).zip(ups.chunks_exact(4)) {
        irun_opkit::simd::prefetch_read_ptr(vs.as_ptr().wrapping_add(LEAN_AHEAD));
        irun_opkit::simd::prefetch_read_ptr(us.as_ptr().wrapping_add(LEAN_AHEAD));
        let p: [usize; 4] = std::array::from_fn(|j| place::<WRAP>(vs[j].into(), along, base));
        if p.iter().fold(false, |out, &p| out | (p >= len)) {
            break;
        }
        for j in 0..4 {
            dst[p[j]] = C::apply(dst[p[j]], us[j]);
        }
        done += 4;
    }
    for (k, (&v, &u)) in vals.iter().zip(ups).enumerate().skip(done) {
        let Some(d) = dst.get_mut(place::<WRAP>(v.into(), along, base)) else {
            return Err(k);
        };
        *d = C::apply(*d, u);
    }
    Ok(())
}

/// How many positions ahead the lean loops ask for their indices and updates. The hardware's
/// stream prefetch alone left the loop waiting on those loads (perf: the updates' loads
/// were its hottest instructions): 8M sorted i32 maxima on 2 threads (Zen 4) 5.98 to 5.32
/// ms, reversed 6.41 to 5.83 (medians of 4-5 alternating runs); 256 and 512 no better. Not
/// in [`flat_runs`], where it slowed 16M sorted f32 sums onto 1M targets (8.57 to 9.36).
const LEAN_AHEAD: usize = 128;

/// As [`flat_plain`], with the current run of equal targets accumulated in a register.
#[inline(always)]
fn flat_runs<T: Elem, C: Combine<T>, V: NativeIndex, const WRAP: bool>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
) -> Result<(), usize> {
    let Some(&first) = vals.first() else {
        return Ok(());
    };
    let first: i64 = first.into();
    // No short cut in the test, so that it vectorises too.
    if T::EXACT
        && vals
            .iter()
            .fold(true, |same, &v| same & (v.into() == first))
    {
        // The whole block on one target: one fold of the same applies in the same order,
        // which on integers (associative combines, `Elem::EXACT`) the compiler turns into a
        // vector reduction (8M i32 maxima onto one element: 14 to 10 ms, the rest being the
        // data's copy and the indices' read). On floats it would be the same chain of
        // dependent adds as the loop below, after a test that costs a fifth more.
        let Some(d) = dst.get_mut(place::<WRAP>(first, along, base)) else {
            return Err(0);
        };
        *d = fold_all::<T, C>(*d, ups);
        return Ok(());
    }
    let mut at = place::<WRAP>(first, along, base);
    let Some(&start) = dst.get(at) else {
        return Err(0);
    };
    let mut acc = start;
    for (k, (&v, &u)) in vals.iter().zip(ups).enumerate() {
        let t = place::<WRAP>(v.into(), along, base);
        if t == at {
            acc = C::apply(acc, u);
            continue;
        }
        let Some(&d) = dst.get(t) else {
            dst[at] = acc;
            return Err(k);
        };
        dst[at] = acc;
        (at, acc) = (t, C::apply(d, u));
    }
    dst[at] = acc;
    Ok(())
}

/// `acc` with `ups` applied in order, compiled for the widest vector unit: on integers
/// (associative combines) the fold becomes a vector reduction; on floats it stays the
/// chain of applies it is written as.
#[inline(always)]
fn fold_all<T: Elem, C: Combine<T>>(acc: T, ups: &[T]) -> T {
    irun_opkit::simd::widest(
        #[inline(always)]
        || ups.iter().fold(acc, |a, &u| C::apply(a, u)),
    )
}

/// A block's loop without negative-value wrapping, which are rare (a loop that need not
/// count them from the end is shorter by the instructions that do), then from the first
/// place `k` it stopped at (a negative value, or one out of range) the wrapping loop:
/// `pass(false, 0)`, then `pass(true, k)`, whose stop `j` is the block's `k + j`. Used by
/// the lean loop and the partition's fill.
#[inline(always)]
pub(super) fn plain_then_wrapping(
    mut pass: impl FnMut(bool, usize) -> Result<(), usize>,
) -> Result<(), usize> {
    match pass(false, 0) {
        Ok(()) => Ok(()),
        Err(k) => pass(true, k).map_err(|j| k + j),
    }
}

/// Where index value `v` on an axis of `along` lands in a slice that holds targets
/// `base..` of the axis (with `WRAP`, negative values count from the end, as
/// [`super::geometry::Geometry::target`]). No test for the axis's bounds is needed: the slice
/// lies within the axis, so a value `>= along` lands at or past its end, a value below
/// `-along` (or, without `WRAP`, any negative value) wraps to nearly `2^64`, and a target
/// before `base` wraps too.
#[inline(always)]
fn place<const WRAP: bool>(v: i64, along: usize, base: usize) -> usize {
    let from_end = if WRAP { (v >> 63) & along as i64 } else { 0 };
    ((v + from_end) as usize).wrapping_sub(base)
}
