//! Pass 1 of the bucketed paths: each position's index validated and its `(offset,
//! update)` pair put in the list of its target's bucket, in row-major order
//! ([`ElementsKernel::partition`]), by every thread over its part of a round
//! ([`ElementsKernel::partition_round`]) or by the partitioning tasks of a split round.

use std::ops::Range;

use super::buckets::{BucketMap, PartLists, Put};
use super::geometry::Coords;
use super::kernel::ElementsKernel;
use super::lean::plain_then_wrapping;
use crate::kernel::{split_range, NativeBlocks, NativeIndex};
use crate::op::{codes, OpError};
use crate::par;
use crate::reduce::Elem;
use crate::updates::Updates;

impl ElementsKernel<'_> {
    /// Pass 1 of [`ElementsKernel::run_bucketed`] over the positions `round`, one contiguous
    /// part of them per list: see [`ElementsKernel::partition`].
    pub(super) fn partition_round<T: Elem, U: Updates<T> + ?Sized>(
        &self,
        round: Range<usize>,
        map: &BucketMap,
        sampled: &[u32],
        parts: &mut [PartLists<T>],
        updates: &U,
    ) -> Result<(), OpError> {
        let (at, len) = (round.start, round.len());
        let ranges = split_range(len, parts.len());
        // Every part is refilled, those without a range (a round shorter than the thread
        // count) with nothing: their lists from the last round must not be applied again.
        par::try_for_each_mut(parts, &|i, lists| {
            let r = ranges.get(i).cloned().unwrap_or(len..len);
            let expected = map.expected(sampled, r.len());
            lists
                .start_round(&expected)
                .map_err(|e| (at + r.start, e))?;
            self.partition(at + r.start..at + r.end, map, lists, updates)
        })
    }

    /// Pass 1 of [`ElementsKernel::run_bucketed`] over positions `part`: validates each
    /// index and appends to `lists` the `(offset, update)` of each position, in the bucket
    /// `map` gives its axis target, in row-major order.
    pub(super) fn partition<T: Elem, U: Updates<T> + ?Sized>(
        &self,
        part: Range<usize>,
        map: &BucketMap,
        lists: &mut PartLists<T>,
        updates: &U,
    ) -> Result<(), (usize, OpError)> {
        let g = &self.geometry;
        // The map and the lists stay the same for every block: checked once, here.
        if map.buckets() != lists.count() {
            let e = OpError::new(codes::INTERNAL, "scatter buckets and lists do not match");
            return Err((part.start, e));
        }
        let mut filler = Filler {
            kernel: self,
            map,
            lists,
            updates,
            widened: Vec::new(),
            next: Coords::at(g, part.start),
            // When the output offset is the axis target (histograms), the loop skips the
            // coordinate bookkeeping.
            flat: g.single_flat_row(),
        };
        self.indices.for_each_native(part, &mut filler)
    }

    /// The loop of [`ElementsKernel::partition`] over one block of indices (the first
    /// one's coordinates are `next`): puts each position's pair; stops at the first index out
    /// of range and returns its place in the block. `flat`: the output offset is the axis
    /// target.
    ///
    /// # Safety
    /// `lists` has room for `vals.len()` pairs ([`Put::put`]'s contract), and `map` has as
    /// many buckets as `lists` has lists.
    #[inline(always)]
    pub(super) unsafe fn fill<T: Elem, W: Put<T>, V: NativeIndex>(
        &self,
        flat: bool,
        lists: &mut W,
        map: &BucketMap,
        vals: &[V],
        ups: &[T],
        next: &mut Coords,
    ) -> Result<(), usize> {
        // Monomorphised on `flat`, so that the histogram loop carries no coordinates, and
        // run without negative-value wrapping first (`plain_then_wrapping`). The two loops
        // together put at most one pair per value of `vals`.
        plain_then_wrapping(|wrap, k| {
            let (vals, ups) = (&vals[k..], &ups[k..]);
            // SAFETY: the caller's contract, for `vals` or its tail.
            unsafe {
                match (flat, wrap) {
                    (true, false) => {
                        self.fill_with::<T, W, V, true, false>(lists, map, vals, ups, next)
                    }
                    (false, false) => {
                        self.fill_with::<T, W, V, false, false>(lists, map, vals, ups, next)
                    }
                    (true, true) => {
                        self.fill_with::<T, W, V, true, true>(lists, map, vals, ups, next)
                    }
                    (false, true) => {
                        self.fill_with::<T, W, V, false, true>(lists, map, vals, ups, next)
                    }
                }
            }
        })
    }

    /// One loop of [`ElementsKernel::fill`]; without `WRAP`, a negative value stops it as
    /// one out of range does. `next` is left at the coordinates of the position it stopped
    /// at (or after the block).
    ///
    /// # Safety
    /// As [`ElementsKernel::fill`].
    #[inline(always)]
    pub(super) unsafe fn fill_with<
        T: Elem,
        W: Put<T>,
        V: NativeIndex,
        const FLAT: bool,
        const WRAP: bool,
    >(
        &self,
        lists: &mut W,
        map: &BucketMap,
        vals: &[V],
        ups: &[T],
        next: &mut Coords,
    ) -> Result<(), usize> {
        let g = &self.geometry;
        // Local copies, so that the coordinates and the map live in registers inside the
        // loop: read through references, they would be reloaded after every store.
        let mut at = *next;
        let (map, along) = (map.lookup(), g.data_along);
        // The writer too, moved out for the loop and back after it: through `lists`, which
        // the compiler cannot tell apart from the list memory the loop stores to, the
        // two-bucket writer's cursors were stored and loaded again for every pair, a chain
        // through memory that bounded the loop (the 4 MB f32 sum's partition: 1.65 ns a
        // position).
        let mut writer = std::mem::take(lists);
        let mut stop = None;
        let done = match FLAT && !WRAP {
            true => writer.put_flat_prefix(map, vals, ups, along),
            false => 0,
        };
        // Sliced rather than skipped: `skip` on the zipped iterator cost the many-bucket
        // loop a third (8M i32 maxima onto 32 MB: 14.7 to 21.8 ms).
        let (vals, ups) = (&vals[done..], &ups[done..]);
        for (k, (&v, &u)) in vals.iter().zip(ups).enumerate() {
            let k = done + k;
            // Without `WRAP` a negative value becomes nearly 2^64, out of range.
            let v: i64 = v.into();
            let t = match WRAP {
                true => g.target(v),
                false => v as usize,
            };
            if t >= along {
                stop = Some(k);
                break;
            }
            // SAFETY: one pair per value of `vals`, for which the caller made room; the
            // map's buckets are less than its count, the lists' (the caller's contract).
            if FLAT {
                unsafe { writer.put(map.bucket(t), t as u32, u) };
                continue;
            }
            unsafe { writer.put(map.bucket(t), at.offset(g, t) as u32, u) };
            at.advance(g);
        }
        *lists = writer;
        *next = at;
        stop.map_or(Ok(()), Err)
    }
}

/// [`ElementsKernel::partition`]'s state from one block of indices to the next. Made only
/// there, after checking that `map` has as many buckets as `lists` has lists.
struct Filler<'k, 'a, 'l, T, U: ?Sized> {
    kernel: &'k ElementsKernel<'a>,
    map: &'k BucketMap,
    lists: &'l mut PartLists<T>,
    updates: &'k U,
    /// A block's updates when they are stored narrower than `T` ([`Updates::block`]).
    widened: Vec<T>,
    /// The coordinates of the next block's first position.
    next: Coords,
    flat: bool,
}

impl<T: Elem, U: Updates<T> + ?Sized> NativeBlocks for Filler<'_, '_, '_, T, U> {
    type Error = (usize, OpError);

    fn block_len(&self) -> usize {
        self.updates.block_len()
    }

    fn block<I: NativeIndex>(&mut self, start: usize, vals: &[I]) -> Result<(), Self::Error> {
        let Filler {
            kernel: k,
            map,
            updates,
            flat,
            ..
        } = *self;
        let ups = updates.block(start, vals.len(), &mut self.widened);
        let next = &mut self.next;
        self.lists.make_room(vals.len()).map_err(|e| (start, e))?;
        // SAFETY: room for `vals.len()` pairs was just made in every list, which `fill` puts
        // at most, and the map's buckets are the lists' count (checked by `partition`, the
        // only maker of a `Filler`, whose map and lists never change).
        let fill = match self
            .lists
            .with_two(|two| unsafe { k.fill(flat, two, map, vals, ups, next) })
        {
            Some(fill) => fill,
            None => self
                .lists
                .with_many(|many| unsafe { k.fill(flat, many, map, vals, ups, next) }),
        };
        fill.map_err(|at| (start + at, k.out_of_range(start + at, vals[at].into())))
    }
}
