//! Split rounds: a flat histogram on a small output shares each round between one task
//! that applies its positions straight into the output and tasks that partition the rest
//! into bucket lists, applied after by buckets ([`ElementsKernel::split_round`]). The tasks
//! claim the round's blocks of positions as they go, the lean task from the front and the
//! others from the back, so they finish together whatever each position costs. Nothing is
//! timed: how many positions each side claimed in a round sizes the next round's claims.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::buckets::{apply_pairs, BucketMap, PartLists};
use super::kernel::ElementsKernel;
use super::strategy::Tuning;
use crate::kernel::DisjointSlice;
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};
use crate::updates::Updates;

impl ElementsKernel<'_> {
    /// One round of a flat histogram on a small output, without counts, in two passes
    /// like [`ElementsKernel::run_bucketed`]'s, but the round's first blocks of positions
    /// are applied straight into `out` by one task, the lean pass, while the other tasks
    /// partition the last blocks into their lists; pass 2 then applies only those lists, by
    /// buckets, block by block in position order. The blocks are claimed one at a time
    /// ([`Claims`]): the lean task takes them from the front, the others from the back, so
    /// every lean position precedes every listed one and each element still sees its
    /// updates in row-major order, and the tasks meet wherever their speeds put the cut.
    /// The lean pass's read-modify-writes stay in cache with a small output, and the updates
    /// it takes are neither written to a list nor read back: with every task partitioning,
    /// the second thread made these histograms slower, not faster (a 4 MB f32 sum of 16M
    /// updates: 29 ms on 2 threads, 27.6 ms on 1; split, 21 ms). Claiming replaced a share
    /// set from the last round's timings, which noise kept off balance by a tenth of each
    /// round on a 2-core Xeon.
    ///
    /// The lean task first samples the `next` round's indices, which it returns: taken
    /// between rounds, the sample's scattered reads from memory kept the other threads
    /// waiting (a twentieth of a 16M sum); taken by the lean task, the others claim more
    /// blocks meanwhile.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_round<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        round: Range<usize>,
        next: Option<Range<usize>>,
        map: &BucketMap,
        parts: &mut [PartLists<T>],
        listed: &mut ListedShare,
        updates: &U,
    ) -> Result<Option<Vec<u32>>, OpError> {
        let len = round.len();
        if len > u32::MAX as usize {
            let e = "a split round of more than 2^32 positions";
            return Err(OpError::new(crate::op::codes::INTERNAL, e));
        }
        let next_sample = OnceLock::new();
        let claims = Claims::new(len, parts.len().saturating_sub(1), listed.share);
        let block = |r: Range<usize>| round.start + r.start..round.start + r.end;
        let buckets = map.buckets();
        // Part 0's lists stay unused: its thread runs the lean task.
        let mut work: Vec<SplitWork<'_, T>> = std::iter::once(SplitWork::Lean {
            out: &mut *out,
            claimed: 0,
        })
        .chain(parts[1..].iter_mut().map(|lists| SplitWork::Part {
            lists,
            blocks: Vec::new(),
            claimed: 0,
        }))
        .collect();
        par::try_for_each_mut(&mut work, &|_, item| {
            match item {
                SplitWork::Lean {
                    out,
                    claimed: taken,
                } => {
                    if let Some(next) = &next {
                        let _ = next_sample.set(self.sample_targets(next.clone()));
                    }
                    while let Some(claimed) = claims.front() {
                        let positions = block(claimed);
                        // Its blocks come before every other task's, so its first error
                        // is the round's first: reported at the block's first position.
                        self.lean_range::<T, C, _>(out, 0, positions.clone(), updates)
                            .map_err(|e| (positions.start, e))?;
                        *taken += positions.len();
                    }
                }
                SplitWork::Part {
                    lists,
                    blocks,
                    claimed: taken,
                } => {
                    // Room for the whole round in every list, the same each run: a list
                    // grown to the sample's estimate in the round's first rounds was
                    // moved into new pages, which faulted in while the lean task took the
                    // whole round (3 ms stalls, twice a run of the 16M f32 sum), and a
                    // size that does not change from run to run gets the last run's pages
                    // back from the allocator. Only the pairs written touch memory.
                    let room = vec![len + 1; buckets];
                    lists.start_round(&room).map_err(|e| (round.start, e))?;
                    while let Some(claimed) = claims.back() {
                        self.partition(block(claimed.clone()), map, lists, updates)?;
                        let ends = (0..buckets).map(|b| lists.bucket(b).len()).collect();
                        blocks.push((claimed.start, ends));
                        *taken += claimed.len();
                    }
                }
            }
            Ok(())
        })?;
        let segments = Segments::in_position_order(&work);
        listed.update(&work);
        drop(work);
        let listed = &parts[1..];
        let (out, counts) = (DisjointSlice::new(out), DisjointSlice::new(&mut [][..]));
        let init = self.use_init_val;
        par::for_each_task(buckets, &|b| {
            let (out, counts) = (out.part(b), counts.part(b));
            let far = map.targets(b).len() * std::mem::size_of::<T>() >= Tuning::FAR_BUCKET_BYTES;
            for (part, pairs) in segments.of_bucket(b) {
                let pairs = &listed[part].bucket(b)[pairs];
                // SAFETY: task `b` reaches only the offsets `partition` put in bucket `b`;
                // no counts are kept (split rounds run only without them).
                match far {
                    true => unsafe {
                        apply_pairs::<T, C, false, true>(pairs, 0, &out, &counts, init)
                    },
                    false => unsafe {
                        apply_pairs::<T, C, false, false>(pairs, 0, &out, &counts, init)
                    },
                }
            }
        });
        Ok(next_sample.into_inner())
    }
}

/// The positions of a split round handed out in blocks as the tasks ask: the lean task's
/// from the front, the others' from the back. The unclaimed positions are always one
/// range, `front..back`, packed into one atomic word (a round has fewer than 2^32
/// positions); each claim moves one end inward by compare-and-swap, so no two claims meet,
/// and the tasks stop only when the range is empty, so together they cover the round
/// (unless a task stops at an error). The lean task takes [`Tuning::CLAIM_BLOCK`] positions at a
/// time, which keeps its stream of positions one stretch; the others take a share of what
/// is left (at least [`Tuning::CLAIM_BLOCK`]), so their blocks start anew from memory, which the
/// prefetchers take time to follow, only a few times a round, and get small only where
/// the tasks meet. That share is half of what the partitioning tasks are expected to take
/// of it ([`ListedShare`]): a claim too large for a slow partitioner left the lean task
/// waiting for it at the end of the round.
struct Claims {
    unclaimed: AtomicU64,
    /// The fraction of what is left that one partitioning task claims.
    part: f64,
}

impl Claims {
    /// `positions` fit in 32 bits ([`ElementsKernel::split_round`] checks); `listed` is
    /// the share of them the `partitioners` are expected to take together.
    fn new(positions: usize, partitioners: usize, listed: f64) -> Claims {
        Claims {
            unclaimed: AtomicU64::new(positions as u64),
            part: listed.clamp(0.0, 1.0) / (2 * partitioners.max(1)) as f64,
        }
    }

    /// The lean task's next block, relative to the round's start.
    fn front(&self) -> Option<Range<usize>> {
        self.claim(|front, back| (front, (front + Tuning::CLAIM_BLOCK).min(back)))
    }

    /// A partitioning task's next block.
    fn back(&self) -> Option<Range<usize>> {
        let part = self.part;
        self.claim(|front, back| {
            let size = (((back - front) as f64 * part) as usize).max(Tuning::CLAIM_BLOCK);
            (back.saturating_sub(size).max(front), back)
        })
    }

    /// Takes `pick(front, back)` off the unclaimed range, which must be one of its ends.
    fn claim(&self, pick: impl Fn(usize, usize) -> (usize, usize)) -> Option<Range<usize>> {
        let mut now = self.unclaimed.load(Ordering::Relaxed);
        loop {
            let (front, back) = ((now >> 32) as usize, (now & 0xffff_ffff) as usize);
            if front >= back {
                return None;
            }
            let (start, end) = pick(front, back);
            let rest = match start == front {
                true => (end, back),
                false => (front, start),
            };
            let packed = ((rest.0 as u64) << 32) | rest.1 as u64;
            match self.unclaimed.compare_exchange_weak(
                now,
                packed,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(start..end),
                Err(seen) => now = seen,
            }
        }
    }
}

/// The tasks of [`ElementsKernel::split_round`]'s first pass, each with the positions it
/// claimed. A partitioning task keeps, for each block it claimed, in claim order, the
/// block's first position and its lists' lengths after it.
enum SplitWork<'a, T> {
    Lean {
        out: &'a mut [T],
        claimed: usize,
    },
    Part {
        lists: &'a mut PartLists<T>,
        blocks: Vec<(usize, Vec<usize>)>,
        claimed: usize,
    },
}

/// The share of a split round's positions that its partitioning tasks are expected to take:
/// it sizes their claims ([`Claims`]). The tasks claim blocks until the round is taken, so
/// the share each side claimed in a round is how fast it went against the other, with no
/// clock read. Usually the partitioners take about 60% of a round. When the two vCPUs sit
/// far apart on the host (a cache line's round trip between them 350-400 ns instead of
/// 65-170), a partitioner's writes into lines the other thread read last round cost 8 ns a
/// position instead of 1.2, and its first claim of a quarter of the round, at that pace,
/// outlasted the lean task's whole share: the 16M f32 sum took 40 ms on two threads, 30 on
/// one. Moved halfway to each round's share. What split rounds carry from one round to the
/// next.
pub(super) struct ListedShare {
    share: f64,
}

impl ListedShare {
    /// Before any round: the partitioners' share of the tasks.
    pub(super) fn new(tasks: usize) -> ListedShare {
        let tasks = tasks.max(1);
        ListedShare {
            share: (tasks - 1) as f64 / tasks as f64,
        }
    }

    /// Takes in what one round's tasks claimed: the lean task's positions against the
    /// partitioners' together.
    fn update<T>(&mut self, work: &[SplitWork<'_, T>]) {
        let (mut lean, mut listed) = (0, 0);
        for w in work {
            match w {
                SplitWork::Lean { claimed, .. } => lean += claimed,
                SplitWork::Part { claimed, .. } => listed += claimed,
            }
        }
        self.take(lean, listed);
    }

    fn take(&mut self, lean: usize, listed: usize) {
        if lean == 0 || listed == 0 {
            return;
        }
        let claimed = listed as f64 / (lean + listed) as f64;
        self.share = (0.5 * (self.share + claimed)).clamp(0.02, 0.95);
    }
}

/// Where each partitioned block's pairs lie in its task's lists, the blocks in position
/// order: `(first position, part, claim)` with `part` counted among the partitioning
/// tasks.
struct Segments {
    order: Vec<(usize, usize, usize)>,
    /// Per partitioning task, per claim, the lists' lengths after it.
    ends: Vec<Vec<Vec<usize>>>,
}

impl Segments {
    fn in_position_order<T>(work: &[SplitWork<'_, T>]) -> Segments {
        let ends: Vec<Vec<Vec<usize>>> = work
            .iter()
            .filter_map(|w| match w {
                SplitWork::Part { blocks, .. } => {
                    Some(blocks.iter().map(|(_, ends)| ends.clone()).collect())
                }
                SplitWork::Lean { .. } => None,
            })
            .collect();
        let mut order: Vec<(usize, usize, usize)> = work
            .iter()
            .filter_map(|w| match w {
                SplitWork::Part { blocks, .. } => Some(blocks),
                SplitWork::Lean { .. } => None,
            })
            .enumerate()
            .flat_map(|(p, blocks)| blocks.iter().enumerate().map(move |(c, b)| (b.0, p, c)))
            .collect();
        order.sort_unstable();
        Segments { order, ends }
    }

    /// Bucket `b`'s stretch of pairs of each partitioned block, in position order: the
    /// task's list index and the range in its list.
    fn of_bucket(&self, b: usize) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        self.order.iter().map(move |&(_, p, c)| {
            let ends = &self.ends[p];
            let start = if c == 0 { 0 } else { ends[c - 1][b] };
            (p, start..ends[c][b])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partitioner that claimed a fifth of a round has its share moved halfway there
    /// each round; a round in which either side claimed nothing changes nothing; the share
    /// stays within its bounds.
    #[test]
    fn listed_share_follows_what_was_claimed() {
        let mut s = ListedShare::new(2);
        assert!((s.share - 0.5).abs() < 1e-12);
        s.take(400, 100);
        assert!((s.share - 0.35).abs() < 1e-12, "{}", s.share);
        for _ in 0..40 {
            s.take(400, 100);
        }
        assert!((s.share - 0.2).abs() < 1e-9, "{}", s.share);
        s.take(0, 100);
        s.take(400, 0);
        assert!((s.share - 0.2).abs() < 1e-9);
        for _ in 0..40 {
            s.take(1, 1_000_000);
        }
        assert!(s.share <= 0.95);
        assert!((ListedShare::new(3).share - 2.0 / 3.0).abs() < 1e-12);
        let lean: SplitWork<'_, f32> = SplitWork::Lean {
            out: &mut [],
            claimed: 400,
        };
        let mut lists = PartLists::<f32>::new(2);
        let part = SplitWork::Part {
            lists: &mut lists,
            blocks: Vec::new(),
            claimed: 100,
        };
        let mut s = ListedShare::new(2);
        s.update(&[lean, part]);
        assert!((s.share - 0.35).abs() < 1e-12, "{}", s.share);
    }

    /// A partitioner's claims are half its expected share of what is left, never below a
    /// block: a smaller share makes the first claim smaller.
    #[test]
    fn back_claims_follow_the_listed_share() {
        let n = 100 * Tuning::CLAIM_BLOCK;
        let first = |share: f64| Claims::new(n, 1, share).back().unwrap();
        assert_eq!(first(0.5), n - n / 4..n);
        assert_eq!(first(0.2), n - n / 10..n);
        assert_eq!(first(0.0), n - Tuning::CLAIM_BLOCK..n);
        let two = Claims::new(n, 2, 0.5);
        assert_eq!(two.back().unwrap(), n - n / 8..n);
    }

    /// Front and back claims never take the same position, and together they take every
    /// position once, however they interleave; the front's blocks follow one another from
    /// 0, and claims once all is taken give nothing.
    #[test]
    fn claims_meet_without_overlap() {
        for positions in [
            0,
            1,
            Tuning::CLAIM_BLOCK - 1,
            3 * Tuning::CLAIM_BLOCK + 5,
            100 * Tuning::CLAIM_BLOCK,
        ] {
            for pattern in 0u32..64 {
                let claims = Claims::new(positions, 1, 0.5);
                let (mut front, mut got) = (0, Vec::new());
                for step in 0.. {
                    let claim = match (pattern >> (step % 6)) & 1 {
                        0 => claims.front().inspect(|r| {
                            assert_eq!(r.start, front);
                            front = r.end;
                        }),
                        _ => claims.back(),
                    };
                    match claim {
                        Some(r) => got.push(r),
                        None => break,
                    }
                }
                assert!(claims.front().is_none() && claims.back().is_none());
                got.sort_by_key(|r| r.start);
                let mut at = 0;
                for r in &got {
                    assert!(r.start == at && r.end > r.start, "{positions} {pattern}");
                    at = r.end;
                }
                assert_eq!(at, positions, "{positions} {pattern}");
            }
        }
    }
}
