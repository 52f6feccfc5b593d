//! Split rounds ([`super::split`]): flat histograms on small outputs, each round shared
//! between a lean task and partitioning tasks that claim its positions as they go. Checked
//! against the spec's loop, one update at a time.

use super::strategy::Tuning;
use super::tests_kit::{mixed_f32, on, scattered, Scatter};
use super::*;

/// A flat histogram with enough positions for split rounds, on an output small enough for
/// them: one task's lean share and the other tasks' lists, applied after it, give the
/// sequential sums bit for bit, at 2 and 3 threads, with a last round that is partial.
#[test]
fn split_rounds_match_the_sequential_reference() {
    let n = Tuning::SPLIT_MIN_POSITIONS + Tuning::ROUND_POSITIONS / 3;
    let along = 100_000usize;
    let (idx, upd, data) = (scattered(n, along, None), mixed_f32(n), vec![0.5f32; along]);
    for red in [Reduction::Sum, Reduction::Max] {
        Scatter::new(red, &data, &idx, &upd).check("split rounds", &on(&[2, 3]));
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
        idx[at] = (along + k) as i64;
    }
    let (upd, data) = (vec![0.25f32; n], vec![0.0f32; along]);
    let case = Scatter::new(Reduction::Sum, &data, &idx, &upd);
    case.check_error(along as i64, bad[0], &on(&[2, 3, 2, 3, 2, 3]));
}

/// Rounds hold 2^20 pairs of 8 bytes, 2^19 of 12 (f64, i64 updates), never fewer than a
/// quarter of 2^20.
#[test]
fn rounds_shorten_for_wide_pairs() {
    use super::two_way::Pair;
    let positions =
        |pair_bytes| Tuning::round_positions(pair_bytes) / (Tuning::ROUND_POSITIONS / 4);
    assert_eq!(positions(std::mem::size_of::<Pair<f32>>()), 4);
    assert_eq!(positions(std::mem::size_of::<Pair<i8>>()), 4);
    assert_eq!(positions(std::mem::size_of::<Pair<f64>>()), 2);
    assert_eq!(positions(1 << 20), 1);
}

/// An 8 MB f64 or i64 output: the split rounds' lean task asks for its scattered targets
/// ahead (`lean.rs`, outputs from 6 MB), their buckets of about 4 MB apply fetching ahead
/// (`apply_pairs` with `FETCH`), and the partition's vector steps meet negative indices (a
/// step with one leaves it to the wrapping loop). Split rounds give the spec's loop bit for
/// bit, at 2 and 3 threads.
#[test]
fn far_outputs_match_the_sequential_reference() {
    let along = 1usize << 20;
    let n = Tuning::SPLIT_MIN_POSITIONS + Tuning::ROUND_POSITIONS / 3;
    let idx = scattered(n, along, Some(97));
    let upd: Vec<f64> = mixed_f32(n).into_iter().map(f64::from).collect();
    let ints: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 1001 - 500).collect();
    let data: Vec<f64> = (0..along).map(|i| i as f64 * 0.5).collect();
    let int_data: Vec<i64> = (0..along as i64).collect();
    for red in [Reduction::Sum, Reduction::Max] {
        Scatter::new(red, &data, &idx, &upd).check("8 MB", &on(&[2, 3]));
        Scatter::new(red, &int_data, &idx, &ints).check("8 MB", &on(&[2, 3]));
    }
}
