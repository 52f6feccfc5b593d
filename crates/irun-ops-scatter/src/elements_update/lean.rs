//! The lean pass: each update applied straight to its target, in position order, with no
//! lists and no counts. [`ElementsKernel::run_flat`] runs it on one task and
//! [`ElementsKernel::lean_range`] on one stretch of positions; the loops here
//! ([`lean_block`]) also serve the chunked passes of `local.rs` and `monotone.rs`.

use std::ops::Range;

use super::kernel::ElementsKernel;
use super::strategy::Tuning;
use crate::fill::Upcoming;
use crate::kernel::{count_from_end, NativeBlocks, NativeIndex};
use crate::op::{codes, OpError};
use crate::reduce::{Combine, Elem};
use crate::updates::Updates;

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

    /// The error for index value `v` at `pos`, where a lean loop stopped: out of range, or
    /// (an internal error) in range but outside the stretch of output the loop was given.
    pub(super) fn lean_error(&self, pos: usize, v: i64) -> OpError {
        if self.geometry.target(v) < self.geometry.data_along {
            OpError::new(codes::INTERNAL, "a scatter chunk left its output span")
        } else {
            self.out_of_range(pos, v)
        }
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

    fn block_len(&self) -> usize {
        self.updates.block_len()
    }

    fn block<V: NativeIndex>(&mut self, start: usize, vals: &[V]) -> Result<(), OpError> {
        let (k, along) = (self.kernel, self.kernel.geometry.data_along);
        let ups = self.updates.block(start, vals.len(), &mut self.widened);
        let done = match std::mem::size_of_val(self.dst) >= Tuning::FAR_OUTPUT_BYTES {
            true => lean_block::<T, C, V, true>(self.dst, along, self.base, vals, ups, None),
            false => lean_block::<T, C, V, false>(self.dst, along, self.base, vals, ups, None),
        };
        done.map_err(|i| k.lean_error(start + i, vals[i].into()))
    }
}

/// The lean loop over one block of indices `vals` and their updates `ups` onto `dst`, which
/// holds targets `base..` of an axis of `along`: each update applied to its target in
/// order. On the first index out of range or outside `dst`, its place in the block, every
/// update before it applied and none from it on. `FAR`: `dst` is large enough for asking
/// for scattered targets ahead to pay ([`Tuning::FAR_OUTPUT_BYTES`]); a constant, so that the
/// chunked passes, whose windows are small, compile the loop as it was. `window`: `dst` is
/// a [`crate::fill::Window`]'s span, just copied, and the output it will copy next, which
/// the sorted blocks' loop fetches meanwhile ([`interleaved`]).
#[inline(always)]
pub(super) fn lean_block<T: Elem, C: Combine<T>, V: NativeIndex, const FAR: bool>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
    window: Option<Upcoming>,
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
    // How many targets the block spans, first to last.
    let reach = first.abs_diff(last);
    let dense = reach.saturating_mul(4) <= n as u64;
    let runny = n > 2 && ordered && dense;
    // Targets in order within a short stretch (sorted, reverse-sorted) come from lines the
    // hardware fetches ahead by itself. Its own closure, present only when `FAR`: a
    // run-time choice inside the closure below cost the chunked passes' loop registers
    // (the indices' pointer reloaded from the stack for every position: 8M sorted i32
    // maxima 5.3-5.5 to 5.9-6.1 ms).
    let span = reach.saturating_mul(std::mem::size_of::<T>() as u64);
    if FAR && !runny && !(ordered && span <= Tuning::ORDERED_SPAN_BYTES) {
        return plain_then_wrapping(|wrap, k| {
            let (vals, ups) = (&vals[k..], &ups[k..]);
            match wrap {
                false => flat_plain::<T, C, V, false, true, false>(
                    dst,
                    along,
                    base,
                    vals,
                    ups,
                    Upcoming::NONE,
                ),
                true => flat_plain::<T, C, V, true, true, false>(
                    dst,
                    along,
                    base,
                    vals,
                    ups,
                    Upcoming::NONE,
                ),
            }
        });
    }
    // Sorted and reverse-sorted blocks, whose neighbours often share a target, take their
    // applies apart where their order does not matter ([`interleaved`]). Scattered targets
    // keep the plain loop, so the span is tested too: with only the three samples in order,
    // a third of the uniform blocks took it (16M i64 indices onto a 250K i32 sum, 9.9 to
    // 12.2 ms). And only on a window's lines, which it has just copied into the cache: on
    // an output copied whole beforehand, whose lines come from memory as the loop reaches
    // them, the reordered loop was slower (8M sorted i32 maxima on one thread: 9.6 to 12.2
    // ms).
    let apart = window.is_some() && ordered && reach <= 4 * n as u64 && T::EXACT && C::COMMUTES;
    let upcoming = window.unwrap_or(Upcoming::NONE);
    // Without wrapping first: four instructions a position fewer, a third of the loop's
    // time (8M sorted i32 maxima on a 2-core Xeon).
    plain_then_wrapping(|wrap, k| {
        let (vals, ups) = (&vals[k..], &ups[k..]);
        match (runny, apart, wrap) {
            (true, _, false) => flat_runs::<T, C, V, false>(dst, along, base, vals, ups),
            (true, _, true) => flat_runs::<T, C, V, true>(dst, along, base, vals, ups),
            (false, false, false) => {
                flat_plain::<T, C, V, false, false, false>(dst, along, base, vals, ups, upcoming)
            }
            (false, false, true) => {
                flat_plain::<T, C, V, true, false, false>(dst, along, base, vals, ups, upcoming)
            }
            (false, true, false) => {
                flat_plain::<T, C, V, false, false, true>(dst, along, base, vals, ups, upcoming)
            }
            (false, true, true) => {
                flat_plain::<T, C, V, true, false, true>(dst, along, base, vals, ups, upcoming)
            }
        }
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
fn flat_plain<
    T: Elem,
    C: Combine<T>,
    V: NativeIndex,
    const WRAP: bool,
    const FAR: bool,
    const APART: bool,
>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
    upcoming: Upcoming,
) -> Result<(), usize> {
    let len = dst.len();
    let mut done = match APART {
        true => interleaved::<T, C, V, WRAP>(dst, along, base, vals, ups, upcoming),
        false => 0,
    };
    for (vs, us) in vals[done..]
        .chunks_exact(4)
        .zip(ups[done..].chunks_exact(4))
    {
        irun_opkit::simd::prefetch_read_ptr(vs.as_ptr().wrapping_add(Tuning::LEAN_AHEAD));
        irun_opkit::simd::prefetch_read_ptr(us.as_ptr().wrapping_add(Tuning::LEAN_AHEAD));
        if FAR {
            // A hint only: the place may be out of range (the loop below stops there).
            for v in vals.iter().skip(done + Tuning::FAR_AHEAD).take(4) {
                let p = place::<WRAP>((*v).into(), along, base);
                irun_opkit::simd::prefetch_write_ptr(dst.as_ptr().wrapping_add(p));
            }
        }
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

/// The first part of [`flat_plain`] where the order of applies to one element does not
/// matter (exact types, combines that commute): groups of 16 positions, each applied in
/// the order 0, 4, 8, 12, 1, 5, ... so that neighbours, which sorted indices often give one
/// target, are four applies apart. In order, each such pair is a store and a load that must
/// wait for it to be forwarded; apart, other applies run meanwhile. Stand-alone, one thread,
/// sorted i32 maxima in cache: 0.75 to 0.58 ns a position (strides of 2 and 8, groups of 8
/// and 32: 0.58-0.69). 8M sorted i32 maxima on 2 threads (Zen 4, medians of 6 alternating
/// runs): 5.22 to 4.77 ms, reverse-sorted 6.05 to 5.47. Returns the positions applied: up
/// to the first group with a place outside `dst`. Each group also asks for its share of
/// the `upcoming` lines, data and slots, so that the window's next copy finds them in
/// cache instead of waiting on memory between two blocks' loops.
#[inline(always)]
fn interleaved<T: Elem, C: Combine<T>, V: NativeIndex, const WRAP: bool>(
    dst: &mut [T],
    along: usize,
    base: usize,
    vals: &[V],
    ups: &[T],
    upcoming: Upcoming,
) -> usize {
    let len = dst.len();
    let mut done = 0;
    // The upcoming lines, spread over the groups: a share of whole lines each.
    let groups = (vals.len() / 16).max(1);
    let share = upcoming.bytes.div_ceil(groups).next_multiple_of(64);
    let mut fetched = 0;
    for (vs, us) in vals.chunks_exact(16).zip(ups.chunks_exact(16)) {
        irun_opkit::simd::prefetch_read_ptr(vs.as_ptr().wrapping_add(Tuning::LEAN_AHEAD));
        irun_opkit::simd::prefetch_read_ptr(us.as_ptr().wrapping_add(Tuning::LEAN_AHEAD));
        let stop = (fetched + share).min(upcoming.bytes);
        while fetched < stop {
            // Hints only: a prefetch never faults.
            irun_opkit::simd::prefetch_read_ptr(upcoming.src.wrapping_add(fetched));
            irun_opkit::simd::prefetch_write_ptr(upcoming.slots.wrapping_add(fetched));
            fetched += 64;
        }
        let p: [usize; 16] = std::array::from_fn(|j| place::<WRAP>(vs[j].into(), along, base));
        if p.iter().fold(false, |out, &p| out | (p >= len)) {
            break;
        }
        for first in 0..4 {
            for j in (first..16).step_by(4) {
                dst[p[j]] = C::apply(dst[p[j]], us[j]);
            }
        }
        done += 16;
    }
    done
}

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
pub(super) fn fold_all<T: Elem, C: Combine<T>>(acc: T, ups: &[T]) -> T {
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
    let v = if WRAP {
        count_from_end(v, along as i64)
    } else {
        v
    };
    (v as usize).wrapping_sub(base)
}
