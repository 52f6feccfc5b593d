//! Local indices with long runs of one target on integer data: the chunks that start inside
//! a run (or with a long one) fold it apart and apply the fold after the chunks before them
//! ([`super::lean`]). Checked against the spec's loop, one update at a time.

use super::strategy::Tuning;
use super::tests_kit::{both_widths, on, Scatter, EVERY_REDUCTION};
use super::*;

/// Every reduction, at 1, 2 and 3 threads, equals the sequential loop on: one target for all
/// (written as `t` and as `t - along`, which the run must see as one); sorted and
/// reverse-sorted runs of about 10,000 (longer than a boundary's search for a change, so
/// splits stay inside runs); a long run of one target then sorted targets (the first
/// chunk folds it apart too); and that run's target met again later, which must not run
/// in chunks. Products wrap, so a fold applied out of order would show. Indices stored as
/// i64 and as i32.
#[test]
fn runs_folded_apart_match_the_sequential_loop() {
    let n = Tuning::BUCKETED_MIN_INDICES + 4321;
    let along = 50_000usize;
    let t = 777i64;
    let sorted_runs: Vec<i64> = (0..n).map(|i| (i / 10_007) as i64 * 3).collect();
    let cases: Vec<(&str, Vec<i64>)> = vec![
        ("one target", vec![t; n]),
        (
            "one target, both signs",
            (0..n)
                .map(|i| if i % 7 == 0 { t - along as i64 } else { t })
                .collect(),
        ),
        ("sorted runs", sorted_runs.clone()),
        ("reversed runs", sorted_runs.iter().rev().copied().collect()),
        (
            "long run, then sorted",
            (0..n)
                .map(|i| {
                    if i < n / 2 {
                        t
                    } else {
                        ((i - n / 2) * 40_000 / n) as i64 + 1000
                    }
                })
                .collect(),
        ),
        (
            "long run, its target again later",
            (0..n)
                .map(|i| if i < n / 2 { t } else { (i - n / 2) as i64 / 8 })
                .collect(),
        ),
    ];
    let upd: Vec<i32> = (0..n).map(|i| ((i * 7919) % 2003) as i32 - 1000).collect();
    let data: Vec<i32> = (0..along).map(|i| (i % 17) as i32 - 8).collect();
    let runs = [on(&[1]), both_widths(&on(&[2, 3]))].concat();
    for (name, idx) in &cases {
        for red in EVERY_REDUCTION {
            Scatter::new(red, &data, idx, &upd).check(name, &runs);
        }
    }
}

/// An index out of range inside a long run of one target: the fold stops there, no chunk
/// runs, and the one-task pass reports the first bad position at any thread count.
#[test]
fn a_bad_index_inside_a_run_is_reported_at_its_position() {
    let n = Tuning::BUCKETED_MIN_INDICES + 10;
    let along = 1000usize;
    let (data, upd) = (vec![0i32; along], vec![1i32; n]);
    for bad in [n / 4, n * 3 / 4] {
        let mut idx = vec![5i64; n];
        idx[bad] = -(along as i64) - 1;
        let case = Scatter::new(Reduction::Max, &data, &idx, &upd);
        case.check_error(-1001, bad, &on(&[1, 2, 3]));
    }
}
