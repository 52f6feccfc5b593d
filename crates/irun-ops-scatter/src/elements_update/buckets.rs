//! The per-part, per-bucket lists of the bucketed path, reused from round to round.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::geometry::hit;
use super::strategy::Tuning;
use super::two_way::Pair;
use crate::kernel::{NativeIndex, Part};
use crate::op::{codes, OpError};
use crate::reduce::{Combine, Elem};

/// The work lists one part of a round of [`ElementsKernel::run_bucketed`](super::kernel::ElementsKernel::run_bucketed) fills: per bucket,
/// the `(output offset, update)` pairs of the part's positions that target the bucket, in
/// row-major order. Each list's length is this round's pairs; its capacity is kept from round
/// to round, and the writers ([`TwoLists`], [`ManyLists`]) fill the spare capacity, so a
/// round costs no allocation and no initialisation once the lists are large enough.
pub(super) struct PartLists<T> {
    lists: Vec<Vec<Pair<T>>>,
}

impl<T: Elem> PartLists<T> {
    pub(super) fn new(buckets: usize) -> PartLists<T> {
        PartLists {
            lists: (0..buckets).map(|_| Vec::new()).collect(),
        }
    }

    pub(super) fn bucket(&self, b: usize) -> &[Pair<T>] {
        &self.lists[b]
    }

    /// The pairs bucket `b` holds over all of `parts`' lists.
    pub(super) fn pairs_in(parts: &[PartLists<T>], b: usize) -> usize {
        parts.iter().map(|p| p.bucket(b).len()).sum()
    }

    /// Empties every list for a new round, and gives bucket `b` room for `expected[b]`
    /// pairs (the round's estimate): growing a list by doubling as it fills would copy it
    /// over and over.
    pub(super) fn start_round(&mut self, expected: &[usize]) -> Result<(), OpError> {
        for (list, &want) in self.lists.iter_mut().zip(expected) {
            list.clear();
            list.try_reserve(want).map_err(|_| no_memory())?;
        }
        Ok(())
    }

    /// The number of lists, one per bucket.
    pub(super) fn count(&self) -> usize {
        self.lists.len()
    }

    /// Room for `n` more pairs in every bucket, plus the one slot past the end that
    /// [`TwoLists`] writes in the bucket it does not fill.
    pub(super) fn make_room(&mut self, n: usize) -> Result<(), OpError> {
        for list in &mut self.lists {
            if list.capacity() - list.len() < n + 1 {
                let more = (n + 1).max(list.capacity());
                list.try_reserve(more).map_err(|_| no_memory())?;
            }
        }
        Ok(())
    }

    /// Runs `f` with the two-bucket writer on the lists' spare room, then makes what it put
    /// part of the lists; `None`, and `f` not run, unless there are two buckets.
    pub(super) fn with_two<R>(&mut self, f: impl FnOnce(&mut TwoLists<'_, T>) -> R) -> Option<R> {
        let [low, high] = &mut self.lists[..] else {
            return None;
        };
        let mut two = TwoLists {
            low: low.spare_capacity_mut(),
            high: high.spare_capacity_mut(),
            cursors: (0, 0),
        };
        let r = f(&mut two);
        let (l, h) = two.cursors;
        // SAFETY: `put` writes a pair to slot `l` of `low`'s spare room (and `h` of `high`'s)
        // before it advances that cursor, and nothing else moves them: the first `l` (`h`)
        // slots past the length are initialised.
        unsafe {
            low.set_len(low.len() + l);
            high.set_len(high.len() + h);
        }
        Some(r)
    }

    /// Runs `f` with the writer for any number of buckets on the lists' spare room, then
    /// makes what it put part of the lists.
    pub(super) fn with_many<R>(&mut self, f: impl FnOnce(&mut ManyLists<'_, T>) -> R) -> R {
        // `put` trusts every bucket below the lists' count to have an end here.
        assert!(
            self.lists.len() <= Tuning::MAX_BUCKETS,
            "more scatter work lists than the writer holds"
        );
        let mut starts = [std::ptr::null_mut(); Tuning::MAX_BUCKETS];
        for (start, list) in starts.iter_mut().zip(&mut self.lists) {
            *start = list.spare_capacity_mut().as_mut_ptr();
        }
        let mut many = ManyLists {
            ends: starts,
            _lists: std::marker::PhantomData,
        };
        let r = f(&mut many);
        for ((list, &start), &end) in self.lists.iter_mut().zip(&starts).zip(&many.ends) {
            // SAFETY: `end` started at `start` and only `put` moved it, one slot past each
            // pair it wrote, within the room `make_room` made (its contract): both lie in
            // the same allocation, `end` at or after `start`, and the slots between hold
            // initialised pairs.
            unsafe {
                let n = end.offset_from(start) as usize;
                list.set_len(list.len() + n);
            }
        }
        r
    }
}

fn no_memory() -> OpError {
    OpError::new(codes::MEMORY, "cannot allocate scatter work lists")
}

/// Appends `(offset, update)` to a bucket's list, within the room [`PartLists::make_room`] made.
///
/// `Default` is an empty writer, with no room, that a loop leaves in place of the writer it
/// moves into a local (`ElementsKernel::fill_with`).
pub(super) trait Put<T>: Default {
    /// Unchecked: a bounds check per pair cost the 8M i32 max's partition 12% (7.1 to 6.2
    /// ms without it, medians of 84 runs).
    ///
    /// # Safety
    /// `bucket` is less than the number of the [`PartLists`]' lists, and since the writer
    /// was handed out, counting this pair, at most `n` pairs were put, where `n` is the
    /// room the last [`PartLists::make_room`] before it made.
    unsafe fn put(&mut self, bucket: usize, off: u32, u: T);

    /// Puts the pairs of a first stretch of `vals` (a flat histogram's targets, read
    /// without wrapping: `ups` are their updates) where the writer has a vector loop for
    /// them, and returns its length; the scalar loop goes on from there. It stops before
    /// any value outside `0..along`. The default puts none.
    fn put_flat_prefix<V: NativeIndex>(
        &mut self,
        _map: Lookup<'_>,
        _vals: &[V],
        _ups: &[T],
        _along: usize,
    ) -> usize {
        0
    }
}

/// The writer for two buckets: writes each pair to both lists and advances one cursor, which
/// leaves no branch to mispredict on random targets. Small enough for its cursors to live in
/// registers, once the loop holds it in a local (`ElementsKernel::fill_with`). Its fields
/// are private: [`PartLists::with_two`]'s proof rests on `put` alone moving the cursors (an
/// empty `Default` writer swapped in and out moves none).
pub(super) struct TwoLists<'a, T> {
    low: &'a mut [MaybeUninit<Pair<T>>],
    high: &'a mut [MaybeUninit<Pair<T>>],
    cursors: (usize, usize),
}

impl<T> Default for TwoLists<'_, T> {
    fn default() -> Self {
        TwoLists {
            low: &mut [],
            high: &mut [],
            cursors: (0, 0),
        }
    }
}

impl<T: Copy> Put<T> for TwoLists<'_, T> {
    #[inline(always)]
    unsafe fn put(&mut self, bucket: usize, off: u32, u: T) {
        let (l, h) = self.cursors;
        debug_assert!(bucket < 2 && l < self.low.len() && h < self.high.len());
        // SAFETY: `l` and `h` count the pairs put in each list, so both are at most the
        // pairs put before this one, fewer than `n` (the caller's contract); `make_room(n)`
        // left `n + 1` slots in each list.
        unsafe {
            *self.low.get_unchecked_mut(l) = MaybeUninit::new(Pair { off, val: u });
            *self.high.get_unchecked_mut(h) = MaybeUninit::new(Pair { off, val: u });
        }
        self.cursors = (l + 1 - bucket, h + bucket);
    }

    /// Eight positions at a time in AVX-512 vectors where the map splits the targets at
    /// one cut ([`super::two_way`]).
    fn put_flat_prefix<V: NativeIndex>(
        &mut self,
        map: Lookup<'_>,
        vals: &[V],
        ups: &[T],
        along: usize,
    ) -> usize {
        let Some(cut) = map.cut else { return 0 };
        let TwoLists { low, high, cursors } = self;
        super::two_way::put_prefix(vals, ups, along, cut, low, high, cursors)
    }
}

/// The writer for any number of buckets: each list's end, where its next pair goes
/// (private, as for [`TwoLists`]). One pointer a bucket rather than a slice and a count:
/// a pair's put loads one word and stores one back, not two loads and a store (a
/// stand-alone partition of 8M pairs into 32 lists on 2 threads: 8.1 to 7.2 ms).
pub(super) struct ManyLists<'a, T> {
    ends: [*mut MaybeUninit<Pair<T>>; Tuning::MAX_BUCKETS],
    _lists: std::marker::PhantomData<&'a mut [MaybeUninit<Pair<T>>]>,
}

impl<T> Default for ManyLists<'_, T> {
    fn default() -> Self {
        ManyLists {
            ends: [std::ptr::null_mut(); Tuning::MAX_BUCKETS],
            _lists: std::marker::PhantomData,
        }
    }
}

impl<T: Copy> Put<T> for ManyLists<'_, T> {
    #[inline(always)]
    unsafe fn put(&mut self, bucket: usize, off: u32, u: T) {
        // SAFETY: `bucket` is one of the lists (the caller's contract), so less than
        // `MAX_BUCKETS`, the array's length.
        let end = unsafe { self.ends.get_unchecked_mut(bucket) };
        // Up to 64 list ends take stores, each line of them new: fetched ahead, a line does
        // not hold its stores in the store buffer while it comes from memory (the 32 MB
        // i32 max's partition: 16 to 10 ms). A hint only: it may point past the room.
        irun_opkit::simd::prefetch_write_ptr(end.wrapping_add(Tuning::LIST_AHEAD));
        // SAFETY: `*end` is the list's spare room advanced by the pairs put in it, at most
        // the pairs put before this one, fewer than `n` (the caller's contract); `make_room(n)`
        // left `n + 1` slots, so `*end` and the slot after it lie in the room.
        unsafe {
            end.write(MaybeUninit::new(Pair { off, val: u }));
            *end = end.add(1);
        }
    }
}

/// Which bucket each axis target goes to: contiguous fine ranges of `1 << shift` targets,
/// grouped into buckets of consecutive ranges that receive about equal numbers of updates as
/// a sample of the round's indices counts them. So a skewed distribution (a power law, a few
/// hot targets, sorted indices whose round covers a narrow range) still gives every thread
/// its share of the apply pass; equal ranges would give one thread most of it.
///
/// A target's bucket is a function of the target, and buckets are disjoint sets of targets,
/// which is what the apply pass's disjointness proof rests on. Every bucket it gives is less
/// than [`BucketMap::buckets`] (its constructors only ever write such values in the table),
/// which the unchecked [`Put::put`] rests on.
pub(super) struct BucketMap {
    shift: u32,
    buckets: usize,
    /// The bucket of each fine range.
    table: Vec<u8>,
    /// With two buckets, the first target of the second ([`Lookup::cut`]).
    cut: Option<usize>,
}

impl BucketMap {
    fn new(shift: u32, buckets: usize, table: Vec<u8>) -> BucketMap {
        // Every constructor groups consecutive ranges, so the table never goes down;
        // checked all the same, since the vector partition sides by the cut alone.
        let cut = match buckets == 2 && table.windows(2).all(|w| w[0] <= w[1]) {
            true => Some(
                table
                    .iter()
                    .position(|&b| b == 1)
                    .map_or(usize::MAX, |r| r << shift),
            ),
            false => None,
        };
        BucketMap {
            shift,
            buckets,
            table,
            cut,
        }
    }

    /// How many buckets the targets are grouped into.
    pub(super) fn buckets(&self) -> usize {
        self.buckets
    }

    /// The fine ranges for `targets` axis positions: their shift and count.
    pub(super) fn fine(targets: usize) -> (u32, usize) {
        let mut shift = 0;
        while ((targets.max(1) - 1) >> shift) + 1 > Tuning::FINE_RANGES {
            shift += 1;
        }
        (shift, ((targets.max(1) - 1) >> shift) + 1)
    }

    /// `buckets` (at most [`Tuning::MAX_BUCKETS`]) groups of the fine ranges, balanced by `counts`
    /// (updates counted per fine range). A bucket takes ranges until it holds its share of
    /// the total; a range hotter than a share closes the bucket it joins. Without counts, the
    /// ranges are shared out evenly.
    pub(super) fn balanced(shift: u32, counts: &[u32], buckets: usize) -> BucketMap {
        let buckets = buckets.clamp(1, Tuning::MAX_BUCKETS);
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let ranges = counts.len() as u64;
        let mut table = Vec::with_capacity(counts.len());
        let (mut bucket, mut acc) = (0u64, 0u64);
        for (r, &c) in counts.iter().enumerate() {
            table.push(bucket as u8);
            acc += if total == 0 { 1 } else { u64::from(c) };
            let whole = if total == 0 { ranges } else { total };
            // Past this bucket's share of the whole: the next range opens the next bucket.
            if bucket + 1 < buckets as u64
                && r + 1 < counts.len()
                && acc * buckets as u64 >= (bucket + 1) * whole
            {
                bucket += 1;
            }
        }
        BucketMap::new(shift, buckets, table)
    }

    /// Groups of the fine ranges for a large output applied in one round: about `buckets`
    /// of them balanced by `counts` as [`BucketMap::balanced`], but none spans more than
    /// `max_ranges` ranges (so that a bucket's stretch of the output stays in cache), and a
    /// hot range (half a share or more, that would overfill the bucket it joins) opens a
    /// bucket of its own. After each bucket, the next ones share what is left. So a few hot
    /// targets among cold ones leave the cold buckets as narrow as on uniform indices:
    /// with [`BucketMap::balanced`] a hot range passed several buckets' shares at once,
    /// and the ranges after it each closed a bucket of their own, two thousand targets
    /// wide, until the count caught up, leaving the cold rest fewer and wider buckets. Up
    /// to [`Tuning::MAX_BUCKETS`] buckets; the last takes whatever remains.
    pub(super) fn capped(
        shift: u32,
        counts: &[u32],
        buckets: usize,
        max_ranges: usize,
    ) -> BucketMap {
        let planned = buckets.clamp(1, Tuning::MAX_BUCKETS) as u64;
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return BucketMap::balanced(shift, counts, buckets);
        }
        let max_ranges = max_ranges.max(1);
        let mut table = Vec::with_capacity(counts.len());
        let (mut bucket, mut acc, mut len, mut left) = (0usize, 0u64, 0usize, total);
        // The share of the bucket now open, `open`, of what the buckets before it left, but
        // never above the first share: when capped buckets have used up the planned count,
        // what is left is not one bucket's share, and a hot range is still hot.
        let first = total / planned;
        let share =
            |open: usize, left: u64| (left / planned.saturating_sub(open as u64).max(1)).min(first);
        let mut target = share(0, left);
        for &c in counts {
            let c = u64::from(c);
            let hot = 2 * c >= target && 2 * (acc + c) > 3 * target;
            if len > 0 && (len == max_ranges || hot) && bucket + 1 < Tuning::MAX_BUCKETS {
                (bucket, left) = (bucket + 1, left - acc);
                (acc, len, target) = (0, 0, share(bucket, left));
            }
            table.push(bucket as u8);
            (acc, len) = (acc + c, len + 1);
            if acc >= target.max(1) && bucket + 1 < Tuning::MAX_BUCKETS {
                (bucket, left) = (bucket + 1, left - acc);
                (acc, len, target) = (0, 0, share(bucket, left));
            }
        }
        // A bucket opened after the last range holds nothing: it is not counted.
        let buckets = usize::from(*table.last().unwrap_or(&0)) + 1;
        BucketMap::new(shift, buckets, table)
    }

    /// The axis targets of bucket `b`: consecutive fine ranges (empty if it has none).
    pub(super) fn targets(&self, b: usize) -> Range<usize> {
        let first = self.table.iter().position(|&x| usize::from(x) == b);
        let last = self.table.iter().rposition(|&x| usize::from(x) == b);
        match (first, last) {
            (Some(f), Some(l)) => f << self.shift..(l + 1) << self.shift,
            _ => 0..0,
        }
    }

    /// The pairs each bucket's list can expect from `positions` positions, as the sample
    /// `counts` (per fine range) has them, with a margin for the sample's error; none
    /// without a sample (the lists then grow as they fill).
    pub(super) fn expected(&self, counts: &[u32], positions: usize) -> Vec<usize> {
        let mut per_bucket = vec![0u64; self.buckets];
        for (r, &c) in counts.iter().enumerate() {
            per_bucket[usize::from(self.table[r])] += u64::from(c);
        }
        let total: u64 = per_bucket.iter().sum();
        per_bucket
            .iter()
            .map(|&c| match total {
                0 => 0,
                _ => {
                    let share = (c as f64 / total as f64 * positions as f64) as usize;
                    (share + share / 8 + 1024).min(positions + 1)
                }
            })
            .collect()
    }

    /// The map's table and shift by value, for a hot loop to keep in registers.
    pub(super) fn lookup(&self) -> Lookup<'_> {
        Lookup {
            shift: self.shift,
            table: &self.table,
            cut: self.cut,
        }
    }
}

/// A bucket by target ([`Lookup::bucket`]) on copies of the map's fields.
#[derive(Clone, Copy)]
pub(super) struct Lookup<'a> {
    shift: u32,
    table: &'a [u8],
    /// With two buckets: the first target of bucket 1 (`usize::MAX` when it has none);
    /// every target below it is in bucket 0, every other in bucket 1.
    cut: Option<usize>,
}

impl Lookup<'_> {
    #[inline(always)]
    pub(super) fn bucket(self, target: usize) -> usize {
        usize::from(self.table[target >> self.shift])
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
/// pair's output line [`Tuning::FAR_AHEAD`] pairs ahead: for a bucket's stretch of output beyond
/// the core's caches ([`Tuning::FAR_BUCKET_BYTES`] or more). The f64 sum's split rounds (8 MB
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
            if let Some(ahead) = pairs.get(k + Tuning::FAR_AHEAD) {
                // A hint only: nothing is checked here, and a prefetch never faults.
                out.prefetch_write((ahead.off as usize).wrapping_sub(base));
            }
        }
        // SAFETY: the caller's contract.
        unsafe { hit::<T, C, TRACK>(out, counts, init, off as usize - base, val) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets_of(map: &BucketMap, ranges: usize) -> Vec<usize> {
        (0..ranges)
            .map(|r| map.lookup().bucket(r << map.shift))
            .collect()
    }

    #[test]
    fn buckets_hold_equal_shares_of_the_counted_updates() {
        let (shift, ranges) = BucketMap::fine(1_000_000);
        assert_eq!(ranges, ((1_000_000 - 1) >> shift) + 1);
        assert!(ranges <= Tuning::FINE_RANGES);
        // A power law: most updates in the first ranges.
        let counts: Vec<u32> = (0..ranges).map(|r| (100_000 / (r + 1)) as u32).collect();
        let map = BucketMap::balanced(shift, &counts, 2);
        let b = buckets_of(&map, ranges);
        let share0: u64 = counts
            .iter()
            .zip(&b)
            .filter(|(_, &b)| b == 0)
            .map(|(&c, _)| u64::from(c))
            .sum();
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        assert!(
            share0 * 100 / total >= 45 && share0 * 100 / total <= 60,
            "{share0} of {total}"
        );
        // Consecutive ranges, buckets in order, every target mapped.
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(map.lookup().bucket(999_999), 1);
    }

    #[test]
    fn a_two_bucket_maps_cut_sides_every_target_as_its_table() {
        let (shift, ranges) = BucketMap::fine(1_000_000);
        let mut skewed = vec![1u32; ranges];
        skewed[..40].iter_mut().for_each(|c| *c = 500);
        let maps = [
            BucketMap::balanced(shift, &vec![3u32; ranges], 2),
            BucketMap::balanced(shift, &skewed, 2),
            // Every update on the first range.
            BucketMap::balanced(18, &[9, 0, 0, 0], 2),
        ];
        for map in &maps {
            let cut = map.lookup().cut.expect("two buckets have a cut");
            for t in (0..1_000_000)
                .step_by(97)
                .chain([cut.saturating_sub(1), cut])
            {
                if t < 1_000_000 {
                    assert_eq!(map.lookup().bucket(t), usize::from(t >= cut), "target {t}");
                }
            }
        }
        // Other counts of buckets have none.
        assert_eq!(BucketMap::balanced(shift, &skewed, 3).lookup().cut, None);
        assert_eq!(BucketMap::balanced(shift, &skewed, 1).lookup().cut, None);
    }

    #[test]
    fn a_hot_range_closes_its_bucket() {
        let mut counts = vec![1u32; 64];
        counts[10] = 10_000;
        let map = BucketMap::balanced(0, &counts, 4);
        let b = buckets_of(&map, 64);
        assert_eq!(b[9], 0);
        assert_eq!(b[10], 0);
        assert_eq!(b[11], 1, "the ranges after the hot one go on");
        assert!(b[63] < 4);
        // No counts: the ranges shared out evenly.
        let map = BucketMap::balanced(0, &[0; 8], 2);
        assert_eq!(buckets_of(&map, 8), [0, 0, 0, 0, 1, 1, 1, 1]);
        // Each bucket's targets: its fine ranges, in order, wide as the shift makes them.
        let map = BucketMap::balanced(3, &[0; 8], 2);
        assert_eq!((map.targets(0), map.targets(1)), (0..32, 32..64));
        let map = BucketMap::balanced(0, &counts, 4);
        let mut next = 0;
        for b in 0..4 {
            let t = map.targets(b);
            assert_eq!(t.start, next, "bucket {b} follows the last");
            assert!(t.clone().all(|x| map.lookup().bucket(x) == b));
            next = t.end;
        }
        assert_eq!(next, 64);
    }

    /// The buckets of `map` tile `0..ranges` fine ranges in order: bucket `b`'s ranges
    /// follow bucket `b - 1`'s, and every range has one.
    fn assert_tiles(map: &BucketMap, ranges: usize) {
        let b = buckets_of(map, ranges);
        assert_eq!(b[0], 0);
        assert!(
            b.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1),
            "{b:?}"
        );
        assert_eq!(b[ranges - 1] + 1, map.buckets());
    }

    fn spans(map: &BucketMap) -> Vec<usize> {
        (0..map.buckets()).map(|b| map.targets(b).len()).collect()
    }

    #[test]
    fn capped_buckets_span_at_most_the_cap() {
        // Uniform counts: 8 planned buckets of 512 ranges each, capped at 100 ranges.
        let counts = vec![5u32; 4096];
        let map = BucketMap::capped(0, &counts, 8, 100);
        assert_tiles(&map, 4096);
        assert!(spans(&map).iter().all(|&s| s <= 100), "{:?}", spans(&map));
        assert_eq!(map.buckets(), 41, "4096 ranges, 100 at most per bucket");
        // Under the cap, the buckets are balanced as `balanced` makes them.
        let map = BucketMap::capped(0, &counts, 8, 4096);
        assert_eq!(spans(&map), [512; 8]);
        // No counts: the ranges shared out evenly, as `balanced` does.
        let map = BucketMap::capped(0, &[0; 8], 2, 1);
        assert_eq!(buckets_of(&map, 8), [0, 0, 0, 0, 1, 1, 1, 1]);
        // Never more than Tuning::MAX_BUCKETS: the last takes what remains.
        let map = BucketMap::capped(0, &vec![1u32; 1000], 4, 1);
        assert_tiles(&map, 1000);
        assert_eq!(map.buckets(), Tuning::MAX_BUCKETS);
        assert_eq!(
            map.targets(Tuning::MAX_BUCKETS - 1),
            Tuning::MAX_BUCKETS - 1..1000
        );
    }

    #[test]
    fn a_hot_range_opens_a_bucket_of_its_own_and_the_cold_rest_stay_balanced() {
        // 4 hot ranges holding 4000 updates each among 1020 cold ranges of 4.
        let mut counts = vec![4u32; 1024];
        for hot in [100, 101, 500, 900] {
            counts[hot] = 4000;
        }
        let map = BucketMap::capped(0, &counts, 8, 128);
        assert_tiles(&map, 1024);
        let b = buckets_of(&map, 1024);
        for hot in [100, 101, 500, 900] {
            assert_eq!(map.targets(b[hot]), hot..hot + 1, "hot range {hot} alone");
        }
        // The cold ranges share what the hot ones leave: none closes a bucket by itself
        // (as `balanced` let every range after a hot one do), and the cap, not the few
        // updates they hold, bounds their spans.
        let cold: Vec<usize> = (0..map.buckets())
            .filter(|&k| !([100, 101, 500, 900].map(|h| b[h]).contains(&k)))
            .map(|k| map.targets(k).len())
            .collect();
        assert!(cold.iter().all(|&s| s > 1), "{cold:?}");
        assert!(cold.iter().all(|&s| s <= 128), "{cold:?}");
        assert!(cold.len() <= 1020 / 64, "{cold:?}");
    }

    /// The writers fill the lists' spare room across blocks and rounds: each list holds
    /// exactly its bucket's pairs of the round, in order, whatever the growth on the way.
    #[test]
    fn writers_append_each_rounds_pairs_in_order() {
        let targets: Vec<u32> = (0..10_000u32).map(|i| (i * 7919) % 97).collect();
        for buckets in [2, 5] {
            let mut lists = PartLists::<f32>::new(buckets);
            for round in 0..3 {
                // No estimate in round 0 (the lists grow as they fill), a short one later.
                let expected = vec![round * 10; buckets];
                lists.start_round(&expected).unwrap();
                for block in targets.chunks(777) {
                    lists.make_room(block.len()).unwrap();
                    let put_all = |w: &mut dyn FnMut(usize, u32, f32)| {
                        for &t in block {
                            w(t as usize % buckets, t, t as f32 + round as f32);
                        }
                    };
                    // SAFETY (both writers): `b < buckets`, the lists' count, and the block
                    // puts `block.len()` pairs, the room just made.
                    let two = |two: &mut TwoLists<'_, f32>| {
                        put_all(&mut |b, t, u| unsafe { two.put(b, t, u) })
                    };
                    if lists.with_two(two).is_none() {
                        lists
                            .with_many(|many| put_all(&mut |b, t, u| unsafe { many.put(b, t, u) }));
                    }
                }
                for b in 0..buckets {
                    let want: Vec<Pair<f32>> = targets
                        .iter()
                        .filter(|&&t| t as usize % buckets == b)
                        .map(|&t| Pair {
                            off: t,
                            val: t as f32 + round as f32,
                        })
                        .collect();
                    assert_eq!(lists.bucket(b), &want[..], "bucket {b} of {buckets}");
                }
            }
        }
    }

    /// More lists than the many-bucket writer holds are refused before any pair is put:
    /// its unchecked `put` would index past its array.
    #[test]
    #[should_panic(expected = "more scatter work lists than the writer holds")]
    fn the_many_writer_refuses_more_lists_than_it_holds() {
        PartLists::<f32>::new(Tuning::MAX_BUCKETS + 1).with_many(|_| ());
    }

    #[test]
    fn expected_pairs_follow_the_sample_with_a_margin() {
        let counts = [60u32, 0, 10, 30];
        let map = BucketMap::balanced(0, &counts, 2);
        let expected = map.expected(&counts, 1_000_000);
        // Buckets {0} and {1, 2, 3}: 60% and 40% of the positions, plus the margin.
        assert_eq!(expected.len(), 2);
        assert!(
            expected[0] >= 600_000 && expected[0] < 690_000,
            "{expected:?}"
        );
        assert!(
            expected[1] >= 400_000 && expected[1] < 460_000,
            "{expected:?}"
        );
        assert_eq!(
            map.expected(&[0; 4], 1000),
            [0, 0],
            "no sample, no estimate"
        );
    }
}
