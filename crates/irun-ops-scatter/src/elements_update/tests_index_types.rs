//! Indices stored as i32, which the partition of the bucketed paths and the lean pass read
//! as stored (no block widened to i64 first, `IndexValues::for_each_native`): every path
//! that partitions or runs lean gives the spec's sequential result, the same as the same
//! indices stored as i64, and reports the first index out of range by its stored value.

use super::strategy::Tuning;
use super::tests_kit::{both_widths, kept, Scatter};
use super::*;

/// A flat histogram on an output larger than one round's (each bucket's task fills its
/// stretch from the shared data), and a 2-D scatter with three inner columns (the
/// partition that carries coordinates): sums and maxima with negative indices and
/// duplicates equal the sequential loop at 1-3 threads, for indices stored as i32 and as
/// i64; the shared data is untouched.
#[test]
fn i32_indices_partition_as_the_sequential_loop() {
    let n = Tuning::BUCKETED_MIN_INDICES + 999;
    let flat_targets = Tuning::ROUNDS_MAX_OUTPUT_BYTES / 4 + 4099;
    for (targets, inner) in [(flat_targets, 1usize), (300_001, 3)] {
        let len = n / inner * inner;
        let idx: Vec<i64> = (0..len as i64)
            .map(|i| (i * 2_654_435_761) % targets as i64 - (targets / 3) as i64)
            .collect();
        let upd: Vec<i32> = (0..len as i32)
            .map(|i| i.wrapping_mul(-1_640_531_535))
            .collect();
        let data: Vec<i32> = (0..(targets * inner) as i32)
            .map(|i| i % 1001 - 500)
            .collect();
        for red in [Reduction::Sum, Reduction::Max] {
            let case = Scatter {
                inner,
                ..Scatter::new(red, &data, &idx, &upd)
            };
            case.check(
                &format!("{targets}x{inner}"),
                &both_widths(&kept(&[1, 2, 3])),
            );
        }
    }
}

/// Two i32 indices out of range, in different threads' parts: the error names the first,
/// with its value, whatever the thread count.
#[test]
fn i32_indices_report_the_first_bad_one() {
    let n = Tuning::BUCKETED_MIN_INDICES + 999;
    let targets = Tuning::ROUNDS_MAX_OUTPUT_BYTES / 4 + 4099;
    // Spread over the output, so that they are not local and run bucketed.
    let mut idx: Vec<i64> = (0..n as i64)
        .map(|i| (i * 2_654_435_761) % targets as i64)
        .collect();
    idx[n - 5] = targets as i64;
    idx[n / 3] = -(targets as i64) - 1;
    let (data, upd) = (vec![0i32; targets], vec![1i32; n]);
    let case = Scatter::new(Reduction::Max, &data, &idx, &upd);
    for run in kept(&[1, 2, 3])
        .into_iter()
        .map(|r| tests_kit::Run { narrow: true, ..r })
    {
        let e = case.run(run).unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
        assert_eq!(
            e.message,
            format!(
                "index {} at position [{}] of input 1 (indices) is out of range [-{targets}, {}] for axis 0 of size {targets}",
                -(targets as i64) - 1,
                n / 3,
                targets - 1
            ),
            "{run:?}"
        );
    }
}

/// Local i32 indices (ascending and descending with duplicates, negative values among them,
/// and all equal), which the lean pass reads as stored (`LeanBlocks`), in chunks per thread
/// where their spans allow: sums and maxima equal the sequential loop at 1-3 threads, the
/// same as the indices stored as i64; an index out of range among sorted ones is reported
/// by its position and value whatever the thread count.
#[test]
fn local_i32_indices_run_lean_as_the_sequential_loop() {
    let n = Tuning::BUCKETED_MIN_INDICES + 999;
    let targets = 100_003usize;
    let half = (targets / 2) as i64;
    let ascending: Vec<i64> = (0..n as i64)
        .map(|i| i * targets as i64 / n as i64 - half)
        .collect();
    let descending: Vec<i64> = ascending.iter().rev().copied().collect();
    let equal = vec![-7; n];
    let upd: Vec<i32> = (0..n as i32)
        .map(|i| i.wrapping_mul(-1_640_531_535))
        .collect();
    let data: Vec<i32> = (0..targets as i32).map(|i| i % 1001 - 500).collect();
    let runs = both_widths(&kept(&[1, 2, 3]));
    for (name, idx) in [
        ("ascending", &ascending),
        ("descending", &descending),
        ("equal", &equal),
    ] {
        for red in [Reduction::Sum, Reduction::Max] {
            Scatter::new(red, &data, idx, &upd).check(name, &runs);
        }
    }
    let mut bad = ascending.clone();
    bad[n * 2 / 3] = targets as i64;
    let case = Scatter::new(Reduction::Max, &data, &bad, &upd);
    case.check_error(targets as i64, n * 2 / 3, &runs[3..]);
}

/// Negative values scattered among non-negative ones, in blocks of plain and of runny
/// indices: the lean loop that takes no negative value stops at each, and the loop that
/// counts it from the end takes the rest of its block. The sequential results at 1 thread
/// (one lean pass) and 2 (split rounds, whose lean task runs the same loops), for i32 and
/// i64 indices; a value below `-targets` in mid-block is reported by position and value.
#[test]
fn negative_values_in_mid_block_count_from_the_end() {
    let n = Tuning::SPLIT_MIN_POSITIONS + 4321;
    let targets = 50_021usize;
    let t = targets as i64;
    let idx: Vec<i64> = (0..n as i64)
        .map(|i| {
            // Sorted runs of 16 equal values in every third stretch of 64K positions (so
            // some blocks take the loop that carries a run), each 97th value negative.
            let v = match (i >> 16) % 3 {
                2 => (i / 16) % t,
                _ => (i * 7919) % t,
            };
            if i % 97 == 0 {
                v - t
            } else {
                v
            }
        })
        .collect();
    let upd: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(0x2c1b_3c6d)).collect();
    let data: Vec<i32> = (0..targets as i32).map(|i| i % 777 - 300).collect();
    let runs = both_widths(&kept(&[1, 2]));
    for red in [Reduction::Sum, Reduction::Max] {
        Scatter::new(red, &data, &idx, &upd).check("negative in mid-block", &runs);
    }
    let mut bad = idx.clone();
    let at = 3 * n / 5 + 5;
    bad[at] = -(targets as i64) - 1;
    let case = Scatter::new(Reduction::Sum, &data, &bad, &upd);
    case.check_error(bad[at], at, &runs[2..]);
}
