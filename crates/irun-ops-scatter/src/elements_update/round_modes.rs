//! Whether each round of a split histogram runs split ([`super::split`]) or without
//! handing anything between the threads: the lean loop over all its positions on one task,
//! or, on exact combines that fold apart and commute (integer sums, products, minima,
//! maxima), a chunk per thread folded into the output or a private copy of it
//! ([`super::private`]). Chosen from what a position has cost each way, and remembered by
//! the op from one run to the next ([`RoundMemory`]).
//!
//! Splitting pays while a cache line moves between the cores cheaply: the other threads'
//! apply pass writes lines of the output that the lean task then takes back. These VMs
//! have phases, minutes long, in which the host places the two vCPUs far apart (a line's
//! round trip between them 330-450 ns instead of 60-170): there the 16M f32 sum with half
//! its updates on 8 hot targets took 28 ms split on two threads against 14.5 on one, its
//! lean task slowed from 0.9 to 1.7 ns a position by the lines it took back and its
//! partitioner at 9.4. Each way gives every element the result of its updates in
//! position order, round after round (the private folds an order whose result is the same,
//! on exact combines), so the choice changes the time, never the bits.

use std::sync::Mutex;

/// How one round runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RoundMode {
    /// Split between the lean task and the partitioners ([`super::split`]).
    Split,
    /// All positions on the lean task, the other threads idle; or, where the combine
    /// allows, private folds of a chunk per thread.
    Lean,
}

impl RoundMode {
    fn other(self) -> RoundMode {
        match self {
            RoundMode::Split => RoundMode::Lean,
            RoundMode::Lean => RoundMode::Split,
        }
    }
}

/// What a position has cost each way, in nanoseconds, and how many rounds have run since
/// each way was last measured ([`Measures`]); and the last round's way, with how many
/// rounds in a row ran it.
///
/// A streak's first round is not a measure of its way: it takes back the lines the other
/// way left in the other cores' caches (in a slow phase the first lean round after split
/// ones went at 7.4 ns a position, the next ones at 2.3: the 16M f64 sum). Its next two
/// are, the lower taken, which a round slowed by something else (page faults, another
/// tenant) does not set: the first split measure of a run once read 5.6 ns a position
/// against 1.1 later, and kept the op lean for 96 rounds. After those two, a way costs the
/// lowest of its last three measures ([`Measures`]).
///
/// Nothing is measured in an op's first run, which runs split: it faults in the lists and
/// the output, and its rounds measured 2.8 and 3.9 ns a position where the next runs'
/// went at 0.9 and 1.4 (the 16M f32 sum of skewed indices, split and lean), which chose
/// the lean way for the whole of a benchmark in a fast phase.
#[derive(Clone, Debug, Default)]
pub(super) struct RoundModes {
    /// A run has finished ([`RoundModes::finish_run`]).
    warm: bool,
    split: Measures,
    lean: Measures,
    last: Option<RoundMode>,
    streak: u32,
}

/// A streak's rounds until its way is measured: one to settle, two measures.
const MEASURED_AFTER: u32 = 3;

impl RoundModes {
    /// The next round's mode: split until measured, then lean until measured, then the
    /// cheaper way, measuring the other again now and then ([`remeasure_after`]): phases
    /// come and go. A streak runs until its way is measured.
    pub(super) fn next(&self) -> RoundMode {
        if !self.warm {
            return RoundMode::Split;
        }
        if let (true, Some(last)) = (self.streak < MEASURED_AFTER, self.last) {
            return last;
        }
        let (Some(split), Some(lean)) = (self.split.cost(), self.lean.cost()) else {
            return match self.split.cost() {
                None => RoundMode::Split,
                Some(_) => RoundMode::Lean,
            };
        };
        let (best, other, worse_by) = match lean < split {
            true => (RoundMode::Lean, &self.split, split / lean),
            false => (RoundMode::Split, &self.lean, lean / split),
        };
        match other.since >= remeasure_after(worse_by, best) {
            true => best.other(),
            false => best,
        }
    }

    /// Takes in a round run `mode` over `positions` in `nanos`.
    pub(super) fn took(&mut self, mode: RoundMode, positions: usize, nanos: u64) {
        if !self.warm {
            return;
        }
        if self.last != Some(mode) {
            (self.last, self.streak) = (Some(mode), 1);
            return;
        }
        self.streak = self.streak.saturating_add(1);
        if positions == 0 || nanos == 0 {
            return;
        }
        let measured = nanos as f64 / positions as f64;
        let (this, other) = match mode {
            RoundMode::Split => (&mut self.split, &mut self.lean),
            RoundMode::Lean => (&mut self.lean, &mut self.split),
        };
        if self.streak == 2 {
            // A streak's first measure: what the way cost before is stale.
            *this = Measures::default();
        }
        this.push(measured);
        other.since = other.since.saturating_add(1);
    }

    /// Adds `nanos` a position to what `mode`'s rounds measured: a cost of the run that
    /// came after them (the private rounds' copies, filled and folded once a run). Each
    /// kept measure takes it, so that the way's cost shows it whichever measure is lowest.
    pub(super) fn charge(&mut self, mode: RoundMode, nanos: f64) {
        if !self.warm {
            return;
        }
        let way = match mode {
            RoundMode::Split => &mut self.split,
            RoundMode::Lean => &mut self.lean,
        };
        let len = way.len;
        for m in &mut way.last[3 - len..] {
            *m += nanos;
        }
    }

    /// Ends a run: from the next on, rounds are measured.
    pub(super) fn finish_run(&mut self) {
        self.warm = true;
    }
}

/// A way's last three measures, ns a position, the newest last. Its cost is the lowest of
/// them: what slows a round down (another tenant, an interrupt) never speeds one up, so a
/// slow round among fast ones does not move it, and a way that got dearer (a phase
/// beginning) shows it after three slow rounds in a row. Moving the cost halfway to each
/// measure instead, one slow split round among fast ones (0.85 ns a position, then 1.7:
/// the 16M f16 sum with half its updates on 8 hot targets, in a fast phase, where one
/// split round in ten measured 1.2 or more) made the split way look dearer than the lean
/// one (1.12) and ran lean rounds for the next 43.
///
/// `since` counts the rounds measured the other way since this way's last measure.
#[derive(Clone, Debug, Default)]
struct Measures {
    last: [f64; 3],
    len: usize,
    since: u32,
}

impl Measures {
    fn push(&mut self, ns: f64) {
        self.last.rotate_left(1);
        self.last[2] = ns;
        self.len = (self.len + 1).min(3);
        self.since = 0;
    }

    fn cost(&self) -> Option<f64> {
        self.last[3 - self.len..].iter().copied().reduce(f64::min)
    }
}

/// Rounds run the cheaper way, `best`, before the other is measured again, when it was
/// `worse_by` times as costly: a measure (three rounds) costs `3 * (worse_by - 1)` of a
/// round, so about 1% of the time, from 8 rounds up to 160 while splitting (a fast phase
/// seen to end within 5 runs of the 16M f64 sums, 10 of the f32 ones; phases last
/// minutes) and to 48 while lean: lean is the fallback, and a lean choice that a noisy
/// measure made in a fast phase costs up to 1.8 times the split one, where a split round
/// costs 1.1 to 1.8 times a lean one in a slow phase.
fn remeasure_after(worse_by: f64, best: RoundMode) -> u32 {
    let most = match best {
        RoundMode::Split => 160.0,
        RoundMode::Lean => 48.0,
    };
    (300.0 * (worse_by - 1.0)).clamp(8.0, most) as u32
}

/// `RoundModes` kept by an op between its runs, so that each run starts from what the
/// last one measured instead of measuring both ways again. Two runs at once each take
/// their own copy; the last to finish is kept.
#[derive(Debug, Default)]
pub struct RoundMemory(Mutex<RoundModes>);

impl RoundMemory {
    pub(super) fn recall(&self) -> RoundModes {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub(super) fn keep(&self, modes: RoundModes) {
        if let Ok(mut m) = self.0.lock() {
            *m = modes;
        }
    }
}

#[cfg(test)]
impl RoundMemory {
    /// A memory whose lean rounds measured half the split ones' cost, `since_split` rounds
    /// ago: the next run starts lean, and splits once the split way is due a measure
    /// ([`remeasure_after`]: 48 rounds).
    pub(super) fn leaning(since_split: u32) -> RoundMemory {
        RoundMemory(Mutex::new(RoundModes {
            warm: true,
            split: Measures {
                last: [0.0, 0.0, 2.0],
                len: 1,
                since: since_split,
            },
            lean: Measures {
                last: [0.0, 0.0, 1.0],
                len: 1,
                since: 0,
            },
            ..RoundModes::default()
        }))
    }
}

/// A copy starts afresh: what was measured belongs to the op it was measured for.
impl Clone for RoundMemory {
    fn clone(&self) -> RoundMemory {
        RoundMemory::default()
    }
}

/// Timings are not part of what an op is.
impl PartialEq for RoundMemory {
    fn eq(&self, _: &RoundMemory) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds run `mode` at `nanos` a thousand positions until `m` picks another way:
    /// how many.
    fn rounds_of(m: &mut RoundModes, mode: RoundMode, nanos: u64) -> usize {
        let mut rounds = 0;
        while m.next() == mode {
            m.took(mode, 1000, nanos);
            rounds += 1;
            assert!(rounds < 1000, "{m:?}");
        }
        rounds
    }

    /// Split first, then lean, each measured on the second and third rounds of its streak
    /// (the lower kept); then the cheaper way, the dearer measured again after the rounds
    /// `remeasure_after` gives, and a phase change that makes it the cheaper one taken up.
    #[test]
    fn modes_follow_the_cheaper_way_and_remeasure_the_other() {
        let mut m = RoundModes::default();
        // The first run is not measured.
        m.took(RoundMode::Split, 1000, 1);
        assert_eq!(m.next(), RoundMode::Split);
        m.finish_run();
        // A streak's first round is no measure, and a slow second one is outdone by the
        // third: 9 ns changes nothing.
        let streak = |m: &mut RoundModes, mode, nanos: [u64; 3]| {
            for ns in nanos {
                assert_eq!(m.next(), mode);
                m.took(mode, 1000, ns);
            }
        };
        streak(&mut m, RoundMode::Split, [9000, 9000, 2000]);
        streak(&mut m, RoundMode::Lean, [9000, 1000, 9000]);
        // Lean 1 ns against split's 2: 300 would pass, 48 rounds (lean is the fallback).
        assert_eq!(rounds_of(&mut m, RoundMode::Lean, 1000), 48 - 2);
        // Split now at 1.1: still the dearer, by a tenth: measured again 30 measured
        // rounds on (the first lean one settles).
        streak(&mut m, RoundMode::Split, [9000, 1100, 1300]);
        assert_eq!(rounds_of(&mut m, RoundMode::Lean, 1000), 1 + 30);
        // Split at 0.5 against lean's 1: split from now on. A slow split round among them
        // leaves its cost at 0.5 (the lowest of its last three measures); lean is measured
        // again 160 rounds after it last was (300 would pass).
        streak(&mut m, RoundMode::Split, [9000, 500, 500]);
        m.took(RoundMode::Split, 1000, 1700);
        assert_eq!(m.split.cost(), Some(0.5), "{m:?}");
        assert_eq!(rounds_of(&mut m, RoundMode::Split, 500), 160 - 3);
    }

    /// Slow rounds here and there are not a phase; three in a row are. (Split rounds of the 16M f16 sum
    /// with half its updates on 8 hot targets, in a fast phase: 0.85 ns a position, now
    /// and then one at 1.7; lean ones 1.12.)
    #[test]
    fn one_slow_round_does_not_change_the_way() {
        let mut m = RoundModes::default();
        m.finish_run();
        for (mode, ns) in [(RoundMode::Split, 850), (RoundMode::Lean, 1120)] {
            for _ in 0..MEASURED_AFTER {
                assert_eq!(m.next(), mode);
                m.took(mode, 1000, ns);
            }
        }
        // Back to split, its streak measured afresh; then slow rounds here and there.
        for ns in [850, 850, 850, 1700, 1700, 850, 1700, 850] {
            assert_eq!(m.next(), RoundMode::Split, "{m:?}");
            m.took(RoundMode::Split, 1000, ns);
        }
        for _ in 0..3 {
            assert_eq!(m.next(), RoundMode::Split, "{m:?}");
            m.took(RoundMode::Split, 1000, 1700);
        }
        assert_eq!(m.next(), RoundMode::Lean, "{m:?}");
    }

    /// The cost is the lowest of the last three measures.
    #[test]
    fn measures_give_the_lowest_of_the_last_three() {
        let mut w = Measures::default();
        assert_eq!(w.cost(), None);
        let mut costs = Vec::new();
        for ns in [3.0, 1.0, 2.0, 9.0, 8.0, 0.5, 7.0] {
            w.push(ns);
            costs.push(w.cost().unwrap());
        }
        assert_eq!(costs, [3.0, 1.0, 1.0, 1.0, 2.0, 0.5, 0.5]);
    }

    /// Rounds without a measure change nothing; the remeasure interval stays within its
    /// bounds.
    #[test]
    fn empty_measures_are_ignored_and_intervals_bounded() {
        let mut m = RoundModes::default();
        m.finish_run();
        m.took(RoundMode::Lean, 0, 100);
        m.took(RoundMode::Split, 100, 0);
        assert_eq!(m.next(), RoundMode::Split);
        let (split, lean) = (RoundMode::Split, RoundMode::Lean);
        assert_eq!(remeasure_after(1.0, split), 8);
        assert_eq!(remeasure_after(1.1, lean), 30);
        assert_eq!(remeasure_after(9.0, split), 160);
        assert_eq!(remeasure_after(9.0, lean), 48);
    }

    /// A run's extra cost, charged to a way, raises every measure it keeps (so its cost),
    /// and can make the other way the cheaper one; not in the op's first run.
    #[test]
    fn charges_raise_a_way_s_cost() {
        let mut m = RoundModes::default();
        m.charge(RoundMode::Lean, 5.0);
        assert_eq!(m.lean.cost(), None);
        m.finish_run();
        for (mode, ns) in [(RoundMode::Split, 1000), (RoundMode::Lean, 800)] {
            for _ in 0..MEASURED_AFTER {
                m.took(mode, 1000, ns);
            }
        }
        assert_eq!(m.lean.cost(), Some(0.8));
        assert_eq!(m.next(), RoundMode::Lean);
        m.charge(RoundMode::Lean, 0.5);
        assert_eq!(m.lean.cost(), Some(1.3));
        assert_eq!(m.next(), RoundMode::Split);
    }

    /// The memory hands back what it was given; a clone starts empty and compares equal.
    #[test]
    fn memory_recalls_what_it_kept() {
        let memory = RoundMemory::default();
        let mut m = memory.recall();
        m.finish_run();
        for _ in 0..MEASURED_AFTER {
            m.took(RoundMode::Split, 10, 20);
        }
        memory.keep(m);
        assert_eq!(memory.recall().next(), RoundMode::Lean);
        assert_eq!(memory.clone().recall().next(), RoundMode::Split);
        assert_eq!(memory, memory.clone());
    }
}
