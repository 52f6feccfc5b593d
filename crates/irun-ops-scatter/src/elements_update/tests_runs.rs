//! Local indices with long runs of one target on integer data: the chunks that start inside
//! a run (or with a long one) fold it apart and apply the fold after the chunks before them
//! ([`super::lean`]). Checked against the spec's loop, one update at a time.

use irun_tensor::Tensor;

use super::strategy::Tuning;
use super::tests_eval::assert_out_of_range;
use super::*;
use crate::testing::{eval_with, i32s, i64s};

/// The reductions [`sequential`] knows.
pub(super) const SEQUENTIAL_REDUCTIONS: [Reduction; 5] = [
    Reduction::None,
    Reduction::Sum,
    Reduction::Prod,
    Reduction::Max,
    Reduction::Min,
];

/// ScatterElementsUpdate-12 with the initial values on 1-D i32 data, as the spec says: each
/// update in turn, with wrapping arithmetic.
pub(super) fn sequential(red: Reduction, data: &[i32], idx: &[i64], upd: &[i32]) -> Vec<i32> {
    let mut out = data.to_vec();
    for (&v, &u) in idx.iter().zip(upd) {
        let t = v.rem_euclid(data.len() as i64) as usize;
        let a = out[t];
        out[t] = match red {
            Reduction::None => u,
            Reduction::Sum => a.wrapping_add(u),
            Reduction::Prod => a.wrapping_mul(u),
            Reduction::Max => a.max(u),
            Reduction::Min => a.min(u),
            Reduction::Mean | Reduction::Sub => unreachable!("not among the cases"),
        };
    }
    out
}

/// The scatter with `idx` stored as i64, or as i32 when `narrow` (the loops read both as
/// stored).
fn scatter_as(
    red: Reduction,
    data: &[i32],
    idx: &[i64],
    upd: &[i32],
    threads: usize,
    narrow: bool,
) -> Tensor {
    let n = idx.len();
    let indices = match narrow {
        true => i32s(&[n], &idx.iter().map(|&v| v as i32).collect::<Vec<_>>()),
        false => i64s(&[n], idx),
    };
    eval_with(
        &seu12(red, true),
        vec![
            i32s(&[data.len()], data),
            indices,
            i32s(&[n], upd),
            i64s(&[], &[0]),
        ],
        threads,
    )
    .unwrap()
}

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
    assert_every_reduction_sequential(
        &cases,
        along,
        &[(1, false), (2, false), (3, false), (2, true), (3, true)],
    );
}

/// For each case's indices (as many as `upd`, below), on data of `along` elements: every
/// reduction the sequential loop knows equals it at each `(threads, i32 indices)`.
fn assert_every_reduction_sequential(
    cases: &[(&str, Vec<i64>)],
    along: usize,
    runs: &[(usize, bool)],
) {
    let n = cases.first().map_or(0, |(_, idx)| idx.len());
    let upd: Vec<i32> = (0..n).map(|i| ((i * 7919) % 2003) as i32 - 1000).collect();
    let data: Vec<i32> = (0..along).map(|i| (i % 17) as i32 - 8).collect();
    for (name, idx) in cases {
        for red in SEQUENTIAL_REDUCTIONS {
            let want = sequential(red, &data, idx, &upd);
            for &(threads, narrow) in runs {
                let out = scatter_as(red, &data, idx, &upd, threads, narrow);
                assert!(
                    out.values::<i32>().unwrap() == want.as_slice(),
                    "{name} {red:?} at {threads} threads, i32 indices {narrow}"
                );
            }
        }
    }
}

/// The error of the scatter of `idx` with updates of 1 onto `along` zeros.
fn scatter_error(red: Reduction, along: usize, idx: &[i64], threads: usize) -> OpError {
    let n = idx.len();
    eval_with(
        &seu12(red, true),
        vec![
            i32s(&[along], &vec![0; along]),
            i64s(&[n], idx),
            i32s(&[n], &vec![1; n]),
            i64s(&[], &[0]),
        ],
        threads,
    )
    .unwrap_err()
}

/// An index out of range inside a long run of one target: the fold stops there, no chunk
/// runs, and the one-task pass reports the first bad position at any thread count.
#[test]
fn a_bad_index_inside_a_run_is_reported_at_its_position() {
    let n = Tuning::BUCKETED_MIN_INDICES + 10;
    let along = 1000usize;
    for bad in [n / 4, n * 3 / 4] {
        let mut idx = vec![5i64; n];
        idx[bad] = -(along as i64) - 1;
        for threads in [1, 2, 3] {
            let e = scatter_error(Reduction::Max, along, &idx, threads);
            assert_out_of_range(&e, -1001, bad, "");
        }
    }
}
