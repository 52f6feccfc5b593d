//! Split rounds: a flat histogram on a small output shares each round between one task
//! that applies its positions straight into the output and tasks that partition the rest
//! into bucket lists, applied after by buckets ([`ElementsKernel::split_round`]). Both
//! shares, the lean task's and each bucket's, follow the measured speed of the work.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::buckets::{BucketMap, PartLists};
use super::runtime::{apply_lists, ElementsKernel};
use crate::kernel::{split_range, DisjointSlice};
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};

/// What split rounds carry from one round to the next.
pub(super) struct SplitState {
    pub(super) lean: SplitShare,
    pub(super) buckets: BucketShares,
}

impl SplitState {
    pub(super) fn new(threads: usize, buckets: usize) -> SplitState {
        SplitState {
            lean: SplitShare::new(threads),
            buckets: BucketShares::new(buckets),
        }
    }
}

impl ElementsKernel<'_> {
    /// One round of a flat histogram on a small output, without counts, in two passes
    /// like [`ElementsKernel::run_bucketed`]'s, but the round's first positions (a share
    /// that [`SplitShare`] keeps in balance) are applied straight into `out` by one task,
    /// the lean pass, while the other tasks partition the rest into their lists; pass 2 then
    /// applies only those lists, by buckets. Every position of the first share precedes
    /// every listed one, so each element still sees its updates in row-major order. The
    /// lean pass's read-modify-writes stay in cache with a small output, and the updates it
    /// takes are neither written to a list nor read back: with every task partitioning, the
    /// second thread made these histograms slower, not faster (a 4 MB f32 sum of 16M
    /// updates: 29 ms on 2 threads, 27.6 ms on 1; split, 21 ms). It replaces a probe that
    /// timed one lean round on one thread against one partitioned round and kept the
    /// faster: one round of each was too noisy a measure, and neither used both threads
    /// well.
    ///
    /// The lean task also samples the `next` round's indices, which it returns: taken
    /// between rounds, the sample's scattered reads from memory kept the other threads
    /// waiting (a twentieth of a 16M sum); taken by the lean task, its time is part of what
    /// [`SplitShare`] balances.
    ///
    /// The `map` comes from [`BucketShares`]: the apply tasks' timings set how many of the
    /// next round's pairs each bucket gets.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_round<T: Elem, C: Combine<T>>(
        &self,
        out: &mut [T],
        round: Range<usize>,
        next: Option<Range<usize>>,
        map: &BucketMap,
        sampled: &[u32],
        parts: &mut [PartLists<T>],
        state: &mut SplitState,
        updates: &[T],
    ) -> Result<Option<Vec<u32>>, OpError> {
        let len = round.len();
        let next_sample = OnceLock::new();
        let lean_len = state.lean.lean_len(len);
        let rest = split_range(len - lean_len, parts.len() - 1);
        let timing = SplitTiming::default();
        {
            // Part 0's lists stay unused: its thread runs the lean task.
            let mut work: Vec<SplitWork<'_, T>> = std::iter::once(SplitWork::Lean(&mut *out))
                .chain(parts[1..].iter_mut().map(SplitWork::Part))
                .collect();
            par::try_for_each_mut(&mut work, &|i, item| {
                let started = Instant::now();
                match item {
                    SplitWork::Lean(out) => {
                        let lean = round.start..round.start + lean_len;
                        // Its positions come before every other task's, so its first error
                        // is the round's first: reported at the round's first position.
                        self.lean_range::<T, C>(out, 0, lean, updates)
                            .map_err(|e| (round.start, e))?;
                        if let Some(next) = &next {
                            let _ = next_sample.set(self.sample_targets(next.clone()));
                        }
                        timing.lean(started.elapsed());
                    }
                    SplitWork::Part(lists) => {
                        let r = rest.get(i - 1).cloned().unwrap_or(0..0);
                        let at = round.start + lean_len;
                        let expected = map.expected(sampled, r.len());
                        lists
                            .start_round(&expected)
                            .map_err(|e| (at + r.start, e))?;
                        self.partition(at + r.start..at + r.end, map, lists, updates)?;
                        timing.part(started.elapsed(), r.len());
                    }
                }
                Ok(())
            })?;
        }
        state.lean.update(&timing, lean_len, len - lean_len);
        let listed = &parts[1..];
        let buckets = map.buckets();
        let took: Vec<AtomicU64> = (0..buckets).map(|_| AtomicU64::new(0)).collect();
        let (out, counts) = (DisjointSlice::new(out), DisjointSlice::new(&mut [][..]));
        par::for_each_task(buckets, &|b| {
            let started = Instant::now();
            let (out, counts) = (out.part(b), counts.part(b));
            // SAFETY: task `b` reaches only the offsets `partition` put in bucket `b`; no
            // counts are kept (split rounds run only without them).
            unsafe { apply_lists::<T, C, false>(listed, b, 0, &out, &counts, self.use_init_val) };
            took[b].store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        });
        let pairs: Vec<usize> = (0..buckets)
            .map(|b| listed.iter().map(|p| p.bucket(b).len()).sum())
            .collect();
        let took: Vec<u64> = took.iter().map(|t| t.load(Ordering::Relaxed)).collect();
        state.buckets.update(&took, &pairs);
        Ok(next_sample.into_inner())
    }
}

/// Each bucket's share of a split round's listed pairs, kept so that the apply tasks finish
/// together. Equal counts are not equal work: a bucket whose targets are few and hot (the
/// low targets of a power law, a hot spot) applies its pairs in L2, one whose stretch of
/// the output is larger than L2 waits on L3 for most of them (a 4 MB sum of power-law
/// indices: 201 against 671 us for the same number of pairs). From each round's apply
/// times, the cost of a pair in each bucket sets the next round's shares (inversely), moved
/// halfway there; only the speed of the work is measured, never its result, and the lists
/// are applied in part order whatever the cut, so the output does not depend on it.
pub(super) struct BucketShares {
    shares: Vec<f64>,
}

impl BucketShares {
    pub(super) fn new(buckets: usize) -> BucketShares {
        let b = buckets.max(1);
        BucketShares {
            shares: vec![1.0 / b as f64; b],
        }
    }

    pub(super) fn shares(&self) -> &[f64] {
        &self.shares
    }

    /// Takes in one round's apply times (ns) and pairs per bucket.
    fn update(&mut self, took: &[u64], pairs: &[usize]) {
        let n = self.shares.len();
        if took.len() != n || pairs.len() != n || n < 2 {
            return;
        }
        if took.iter().zip(pairs).any(|(&t, &p)| t == 0 || p == 0) {
            return;
        }
        // Balanced when share_b * cost_b is the same for every bucket.
        let speed: Vec<f64> = (took.iter().zip(pairs))
            .map(|(&t, &p)| p as f64 / t as f64)
            .collect();
        let total: f64 = speed.iter().sum();
        for (share, s) in self.shares.iter_mut().zip(&speed) {
            *share = (0.5 * (*share + s / total)).clamp(0.02, 0.98);
        }
        let sum: f64 = self.shares.iter().sum();
        self.shares.iter_mut().for_each(|s| *s /= sum);
    }
}

/// The tasks of [`ElementsKernel::split_round`]'s first pass.
enum SplitWork<'a, T> {
    Lean(&'a mut [T]),
    Part(&'a mut PartLists<T>),
}

/// How long the lean task and the slowest partitioning task took in one split round, and
/// the positions each partitioner had.
#[derive(Default)]
struct SplitTiming {
    lean_ns: std::sync::atomic::AtomicU64,
    part_ns: std::sync::atomic::AtomicU64,
    part_len: std::sync::atomic::AtomicUsize,
}

impl SplitTiming {
    fn lean(&self, took: Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        self.lean_ns.store(took.as_nanos() as u64, Relaxed);
    }

    fn part(&self, took: Duration, len: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.part_ns.fetch_max(took.as_nanos() as u64, Relaxed);
        self.part_len.fetch_max(len, Relaxed);
    }
}

/// The share of a split round's positions that the lean task takes, kept so that it
/// finishes with the partitioning tasks: from each round's timings, the lean pass's and the
/// partition's costs per position set the next round's share. It starts at one task's
/// share; only the speed of the work is measured, never its result, so the output does not
/// depend on it.
pub(super) struct SplitShare {
    fraction: f64,
    threads: usize,
}

impl SplitShare {
    pub(super) fn new(threads: usize) -> SplitShare {
        SplitShare {
            fraction: 1.0 / threads.max(1) as f64,
            threads: threads.max(2),
        }
    }

    fn lean_len(&self, len: usize) -> usize {
        ((len as f64 * self.fraction) as usize).min(len)
    }

    fn update(&mut self, t: &SplitTiming, lean_len: usize, rest: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let (lean_ns, part_ns) = (t.lean_ns.load(Relaxed), t.part_ns.load(Relaxed));
        let part_len = t.part_len.load(Relaxed);
        if lean_len == 0 || part_len == 0 || rest == 0 || lean_ns == 0 || part_ns == 0 {
            return;
        }
        // Nanoseconds per position: `a` lean, `p` partitioned (per task). Balanced when
        // f a = (1 - f) p / (threads - 1).
        let a = lean_ns as f64 / lean_len as f64;
        let p = part_ns as f64 / part_len as f64;
        let f = p / ((self.threads - 1) as f64 * a + p);
        // Halfway there, so that one noisy round does not swing the next.
        self.fraction = (0.5 * (self.fraction + f)).clamp(0.05, 0.95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(lean_us: u64, part_us: u64, part_len: usize) -> SplitTiming {
        let t = SplitTiming::default();
        t.lean(Duration::from_micros(lean_us));
        t.part(Duration::from_micros(part_us), part_len);
        t
    }

    /// A bucket whose pairs cost three times as much gets its share moved halfway toward a
    /// quarter; missing timings change nothing.
    #[test]
    fn bucket_shares_follow_the_cost_of_a_pair() {
        let mut s = BucketShares::new(2);
        s.update(&[100, 300], &[1000, 1000]);
        assert!((s.shares()[0] - 0.625).abs() < 1e-9, "{:?}", s.shares());
        s.update(&[0, 300], &[1000, 1000]);
        assert!((s.shares()[0] - 0.625).abs() < 1e-9);
        for _ in 0..30 {
            s.update(&[100, 300], &[1000, 1000]);
        }
        assert!((s.shares()[0] - 0.75).abs() < 1e-6, "{:?}", s.shares());
        assert!((s.shares().iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    /// The lean share moves halfway toward the share that would have balanced the round,
    /// within its bounds, and stays put when a timing is missing.
    #[test]
    fn the_lean_share_moves_toward_balance() {
        let mut share = SplitShare::new(2);
        assert_eq!(share.lean_len(1000), 500);
        // Lean at 1 us per position, partition at 3: balanced at f = 3 / (1 + 3) = 0.75, so
        // the share moves from 0.5 to 0.625.
        share.update(&timing(500, 1500, 500), 500, 500);
        assert_eq!(share.lean_len(1000), 625);
        // Equal costs balance at 0.5.
        share.update(&timing(625, 375, 375), 625, 375);
        assert_eq!(share.lean_len(1000), 562);
        share.update(&timing(0, 375, 375), 625, 375);
        assert_eq!(share.lean_len(1000), 562);
        // A partition far slower than the lean pass: at most 0.95.
        for _ in 0..20 {
            share.update(&timing(1, 1_000_000, 1), 1, 1);
        }
        assert_eq!(share.lean_len(1000), 950);
        // Three threads: one lean task against two partitioners, balanced at 1/3 when costs
        // are equal.
        let mut share = SplitShare::new(3);
        for _ in 0..40 {
            share.update(&timing(100, 100, 100), 100, 200);
        }
        assert!((999..=1000).contains(&share.lean_len(3000)));
    }
}
