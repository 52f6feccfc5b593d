//! Split rounds ([`super::split`]): flat histograms on small outputs, each round shared
//! between a lean task and partitioning tasks that claim its positions as they go. Checked
//! against the spec's loop, one update at a time.

use super::strategy::Tuning;
use super::tests_eval::{assert_out_of_range, scatter_1d, sequential_with_init};
use super::*;
use crate::testing::{assert_same_bits, eval_with};

/// `n` indices spread over `0..along` by a multiplicative hash: no two nearby positions on
/// nearby targets, so the runs go bucketed or in split rounds, not lean.
pub(super) fn scattered(n: usize, along: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (i * 2_654_435_761) % along as i64)
        .collect()
}

/// A flat f32 histogram: indices, updates, data.
struct Histogram {
    idx: Vec<i64>,
    upd: Vec<f32>,
    data: Vec<f32>,
}

impl Histogram {
    /// Enough positions for split rounds, the last round partial, scattered over an output
    /// small enough for them.
    fn for_split_rounds() -> Histogram {
        let n = Tuning::SPLIT_MIN_POSITIONS + Tuning::ROUND_POSITIONS / 3;
        let along = 100_000usize;
        Histogram {
            idx: scattered(n, along),
            upd: (0..n)
                .map(|i| ((i * 37) % 101) as f32 * 0.013 - 0.6)
                .collect(),
            data: vec![0.5f32; along],
        }
    }
}

/// A flat histogram with enough positions for split rounds, on an output small enough for
/// them: one task's lean share and the other tasks' lists, applied after it, give the
/// sequential sums bit for bit, at 2 and 3 threads, with a last round that is partial.
#[test]
fn split_rounds_match_the_sequential_reference() {
    let Histogram { idx, upd, data } = Histogram::for_split_rounds();
    for red in [Reduction::Sum, Reduction::Max] {
        let want = sequential_with_init(red, &data, &idx, &upd);
        for threads in [2, 3] {
            let out = scatter_1d(red, &data, &idx, &upd, threads).unwrap();
            assert_same_bits(
                out.values::<f32>().unwrap(),
                &want,
                format!("{red:?} at {threads} threads"),
            );
        }
    }
}

/// Bad indices in a split round, one early and one late in the same round (where the
/// lean task and a partitioning task may each meet one), and one in a later round: the
/// first is reported, at 2 and 3 threads, however the tasks' claims fell (run a few times).
#[test]
fn split_rounds_report_the_first_bad_index() {
    let n = Tuning::SPLIT_MIN_POSITIONS + 1000;
    let along = 100_000usize;
    let mut idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % along as i64).collect();
    let round = Tuning::ROUND_POSITIONS;
    let bad = [round + round / 3, round + round * 9 / 10, 3 * round + 5];
    for (k, &at) in bad.iter().enumerate() {
        idx[at] = along as i64 + k as i64;
    }
    let upd = vec![0.25f32; n];
    let data = vec![0.0f32; along];
    for threads in [2, 3] {
        for _ in 0..3 {
            let e = scatter_1d(Reduction::Sum, &data, &idx, &upd, threads).unwrap_err();
            assert_out_of_range(&e, along, bad[0], &format!("{threads} threads"));
        }
    }
}

/// Rounds hold 2^20 pairs of 8 bytes, 2^19 of 12 (f64, i64 updates), never fewer than a
/// quarter of 2^20.
#[test]
fn rounds_shorten_for_wide_pairs() {
    use super::two_way::Pair;
    assert_eq!(
        Tuning::round_positions(std::mem::size_of::<Pair<f32>>()),
        Tuning::ROUND_POSITIONS
    );
    assert_eq!(
        Tuning::round_positions(std::mem::size_of::<Pair<i8>>()),
        Tuning::ROUND_POSITIONS
    );
    assert_eq!(
        Tuning::round_positions(std::mem::size_of::<Pair<f64>>()),
        Tuning::ROUND_POSITIONS / 2
    );
    assert_eq!(
        Tuning::round_positions(1 << 20),
        Tuning::ROUND_POSITIONS / 4
    );
}

/// An 8 MB f64 or i64 output: the split rounds' lean task asks for its scattered targets
/// ahead (`lean.rs`, outputs from 6 MB), their buckets of about 4 MB apply fetching ahead
/// (`apply_pairs` with `FETCH`), and the partition's vector steps meet negative indices (a
/// step with one leaves it to the wrapping loop). Split rounds give the spec's loop bit for
/// bit, at 2 and 3 threads.
#[test]
fn far_outputs_match_the_sequential_reference() {
    use crate::testing::{f64s, i64s};
    let along = 1usize << 20;
    let n = Tuning::SPLIT_MIN_POSITIONS + Tuning::ROUND_POSITIONS / 3;
    let mut idx = scattered(n, along);
    for (i, v) in idx.iter_mut().enumerate() {
        if i % 97 == 3 {
            *v -= along as i64;
        }
    }
    let target = |v: i64| if v < 0 { v + along as i64 } else { v } as usize;
    let upd: Vec<f64> = (0..n)
        .map(|i| ((i * 37) % 101) as f64 * 0.013 - 0.6)
        .collect();
    let ints: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 1001 - 500).collect();
    let data: Vec<f64> = (0..along).map(|i| i as f64 * 0.5).collect();
    let int_data: Vec<i64> = (0..along as i64).collect();
    for red in [Reduction::Sum, Reduction::Max] {
        let (mut want, mut want_ints) = (data.clone(), int_data.clone());
        for ((&v, &u), &w) in idx.iter().zip(&upd).zip(&ints) {
            let t = target(v);
            (want[t], want_ints[t]) = match red {
                Reduction::Max => (want[t].max(u), want_ints[t].max(w)),
                _ => (want[t] + u, want_ints[t].wrapping_add(w)),
            };
        }
        for threads in [2, 3] {
            {
                let op = || seu12(red, true);
                let case = format!("{red:?} at {threads} threads");
                let inputs = vec![
                    f64s(&[along], &data),
                    i64s(&[n], &idx),
                    f64s(&[n], &upd),
                    i64s(&[], &[0]),
                ];
                let out = eval_with(&op(), inputs, threads).unwrap();
                assert_same_bits(out.values::<f64>().unwrap(), &want, &case);
                let inputs = vec![
                    i64s(&[along], &int_data),
                    i64s(&[n], &idx),
                    i64s(&[n], &ints),
                    i64s(&[], &[0]),
                ];
                let out = eval_with(&op(), inputs, threads).unwrap();
                assert_eq!(out.values::<i64>().unwrap(), &want_ints[..], "i64 {case}");
            }
        }
    }
}
