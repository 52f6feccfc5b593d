//! Local indices (sorted, reverse-sorted, shuffled within small groups, sorted but for one
//! stray) on data the caller keeps: each chunk's lean pass fills its piece of the new
//! output from the data block by block, asking for the targets between a block's first
//! and last index and, when the block reaches past them, for the whole piece; a chunk
//! that leaves its piece makes the whole scatter start again ([`super::lean`]). Checked
//! against the spec's loop, one update at a time, at 1-3 threads.

use super::strategy::Tuning;
use super::tests_kit::{kept, Scatter, EVERY_REDUCTION};
use super::*;

/// Positions: a multiple of 64 (the groups below) times 6, so that the chunks of 1-3
/// threads start on a group's edge and their spans do not overlap.
const N: usize = (Tuning::BUCKETED_MIN_INDICES / 384 + 10) * 384;
const ALONG: usize = N + 777;

/// Index cases: sorted (every fifth written from the end, as a negative value), reverse
/// sorted, and sorted groups of 64 positions whose targets are shuffled within the group
/// (so a block's first and last index do not bound its targets).
fn cases() -> Vec<(&'static str, Vec<i64>)> {
    let sorted: Vec<i64> = (0..N)
        .map(|i| {
            let t = (i * ALONG / N) as i64;
            if i % 5 == 0 {
                t - ALONG as i64
            } else {
                t
            }
        })
        .collect();
    let shuffled = (0..N)
        .map(|i| (i / 64 * 64 + (i * 37) % 64) as i64 + 100)
        .collect();
    // Sorted but for one index early on that targets the far end: the chunks' first
    // targets still rise, so the first chunk leaves its piece and everything starts again.
    let mut strays = sorted.clone();
    strays[N / 10] = ALONG as i64 - 3;
    let mut strays_reversed: Vec<i64> = sorted.iter().rev().copied().collect();
    strays_reversed[N / 10] = 2;
    vec![
        ("reversed", sorted.iter().rev().copied().collect()),
        ("sorted", sorted),
        ("shuffled in groups", shuffled),
        ("sorted, one stray", strays),
        ("reversed, one stray", strays_reversed),
    ]
}

/// f32 sums (not associative, so no run is folded apart and the order must hold), i32
/// maxima and wrapping products, on data the caller keeps.
#[test]
fn local_indices_fill_a_shared_output_as_the_sequential_loop() {
    let data_f: Vec<f32> = (0..ALONG).map(|i| (i % 101) as f32 * 0.37 - 9.0).collect();
    let data_i: Vec<i32> = (0..ALONG).map(|i| (i % 17) as i32 - 8).collect();
    let upd_f: Vec<f32> = (0..N).map(|i| ((i * 7919) % 2003) as f32 * 0.013).collect();
    let upd_i: Vec<i32> = (0..N).map(|i| ((i * 7919) % 2003) as i32 - 1000).collect();
    for (name, idx) in cases() {
        let runs = kept(&[1, 2, 3]);
        Scatter::new(Reduction::Sum, &data_f, &idx, &upd_f).check(name, &runs);
        for red in [Reduction::Max, Reduction::Prod] {
            Scatter::new(red, &data_i, &idx, &upd_i).check(name, &runs);
        }
    }
}

/// Sorted indices with two out of range, in the last third (every chunk's) and at its end,
/// with and without a stray in the first chunk (which starts everything again): the error
/// names the first whatever the thread count, and the kept data is untouched.
#[test]
fn an_index_out_of_range_in_a_later_chunk_is_reported_at_its_position() {
    let (data, upd): (Vec<i32>, _) = ((0..ALONG as i32).collect(), vec![1i32; N]);
    let mut idx: Vec<i64> = (0..N).map(|i| (i * ALONG / N) as i64).collect();
    let bad = N * 5 / 6;
    idx[bad] = ALONG as i64;
    idx[N - 1] = -(ALONG as i64) - 1;
    for stray in [false, true] {
        if stray {
            idx[N / 10] = ALONG as i64 - 3;
        }
        let case = Scatter::new(Reduction::Max, &data, &idx, &upd);
        case.check_error(ALONG as i64, bad, &kept(&[1, 2, 3]));
    }
}

/// Sorted and reverse-sorted targets, in runs of 1 to 4 with gaps of 0 or 1 between them,
/// some written from the end, on data the caller keeps and an output over 1 MB (so that no
/// integer reduction runs as private folds): each chunk's window takes the applies of each
/// group of 16 positions out of order where that cannot change a bit
/// ([`super::lean`]'s `interleaved`). Every reduction equals the sequential loop at 1, 2
/// and 3 threads; replacement must keep its order, and sums and products must apply every
/// update once.
#[test]
fn ordered_neighbours_taken_apart_match_the_sequential_loop() {
    let n = 2 * Tuning::BUCKETED_MIN_INDICES + 4321;
    let mut sorted = Vec::with_capacity(n);
    let mut target = 0i64;
    while sorted.len() < n {
        let run = (target * 7 % 4 + 1) as usize;
        sorted.extend(std::iter::repeat_n(target, run.min(n - sorted.len())));
        target += 1 + target % 2;
    }
    let along = target as usize + 1;
    assert!(along * 4 > 1 << 20, "an output over 1 MB");
    let from_end = |idx: &[i64]| -> Vec<i64> {
        idx.iter()
            .map(|&v| if v % 5 == 0 { v - along as i64 } else { v })
            .collect()
    };
    let reversed: Vec<i64> = sorted.iter().rev().copied().collect();
    let cases = [
        ("sorted", sorted.clone()),
        ("reversed", reversed.clone()),
        ("sorted, some from the end", from_end(&sorted)),
        ("reversed, some from the end", from_end(&reversed)),
    ];
    let upd: Vec<i32> = (0..n).map(|i| ((i * 7919) % 2003) as i32 - 1000).collect();
    let data: Vec<i32> = (0..along).map(|i| (i % 17) as i32 - 8).collect();
    for (name, idx) in &cases {
        for red in EVERY_REDUCTION {
            Scatter::new(red, &data, idx, &upd).check(name, &kept(&[1, 2, 3]));
        }
    }
}

/// An index out of range in the middle of a group of sorted positions (not at a group's
/// start), on data the caller keeps and an output over 1 MB: reported at its position at
/// any thread count, the data untouched.
#[test]
fn a_bad_index_among_ordered_neighbours_is_reported_at_its_position() {
    let n = 2 * Tuning::BUCKETED_MIN_INDICES + 10;
    let along = n / 2 + 1;
    let (data, upd) = (vec![0i32; along], vec![1i32; n]);
    for bad in [n / 4 + 5, n * 3 / 4 + 9] {
        let mut idx: Vec<i64> = (0..n).map(|i| (i / 2) as i64).collect();
        idx[bad] = along as i64;
        let case = Scatter::new(Reduction::Sum, &data, &idx, &upd);
        case.check_error(along as i64, bad, &kept(&[1, 2, 3]));
    }
}
