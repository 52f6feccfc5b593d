use irun_tensor::Tensor;

use super::strategy::Tuning;
use super::tests_kit::{assert_out_of_range, mixed_f32, on, Scatter};
use super::*;
use crate::testing::{eval1, f32s, i32s, i64s};

fn run(op: &ScatterElementsUpdate, data: Tensor, idx: &[i64], upd: Tensor) -> Tensor {
    let n = idx.len();
    eval1(op, vec![data, i64s(&[n], idx), upd, i64s(&[], &[0])]).unwrap()
}

/// Spec examples 1 and 2 of ScatterElementsUpdate-12.
#[test]
fn spec_examples() {
    let out = run(
        &seu12(Reduction::Sum, true),
        i32s(&[4], &[2, 3, 4, 6]),
        &[1, 0, 0, -2, -1, 2],
        i32s(&[6], &[10, 20, 30, 40, 70, 60]),
    );
    assert_eq!(out.values::<i32>().unwrap(), &[52, 13, 104, 76]);
    let out = run(
        &seu12(Reduction::Sum, false),
        i32s(&[4], &[2, 3, 4, 6]),
        &[1, 0, 0, 2, 3, 2],
        i32s(&[6], &[10, 20, 30, 40, 70, 60]),
    );
    assert_eq!(out.values::<i32>().unwrap(), &[50, 10, 100, 70]);
}

/// Reference doc 2.2 verified values: every reduction with and without init values.
#[test]
fn every_reduction_on_f32() {
    use Reduction::*;
    let cases: [(Reduction, bool, [f32; 4]); 11] = [
        (None, true, [3.0, 4.0, 5.0, -1.0]),
        (Sum, true, [10.0, 9.0, 5.0, 4.0]),
        (Sum, false, [5.0, 4.0, 5.0, -1.0]),
        (Prod, true, [30.0, 20.0, 5.0, -5.0]),
        (Prod, false, [6.0, 4.0, 5.0, -1.0]),
        (Min, true, [2.0, 4.0, 5.0, -1.0]),
        (Min, false, [2.0, 4.0, 5.0, -1.0]),
        (Max, true, [5.0, 5.0, 5.0, 5.0]),
        (Max, false, [3.0, 4.0, 5.0, -1.0]),
        (Mean, true, [10.0 / 3.0, 4.5, 5.0, 2.0]),
        (Mean, false, [2.5, 4.0, 5.0, -1.0]),
    ];
    for (red, init, want) in cases {
        let out = run(
            &seu12(red, init),
            f32s(&[4], &[5.0; 4]),
            &[0, 0, 1, 3],
            f32s(&[4], &[2.0, 3.0, 4.0, -1.0]),
        );
        assert_eq!(out.values::<f32>().unwrap(), &want, "{red:?} {init}");
    }
}

#[test]
fn integer_mean_floors() {
    let data = i32s(&[4], &[0, 0, 0, 10]);
    let upd = i32s(&[7], &[-1, -2, 1, 2, -5, -5, -6]);
    let idx = [0, 0, 1, 1, 2, 2, 2];
    let out = run(
        &seu12(Reduction::Mean, true),
        data.clone(),
        &idx,
        upd.clone(),
    );
    assert_eq!(out.values::<i32>().unwrap(), &[-1, 1, -4, 10]);
    let out = run(&seu12(Reduction::Mean, false), data, &idx, upd);
    assert_eq!(out.values::<i32>().unwrap(), &[-2, 1, -6, 10]);
}

#[test]
fn boolean_sum_is_or_and_prod_is_and() {
    let b = |v: &[bool]| Tensor::from_bool(vec![v.len()], v.to_vec()).unwrap();
    let (t, f) = (true, false);
    let data = b(&[t, f, f, t]);
    let upd = b(&[f, t, f, t, f]);
    let idx = [0, 1, 1, 2, 3];
    let cases = [
        (Reduction::Sum, true, [t, t, t, t]),
        (Reduction::Sum, false, [f, t, t, f]),
        (Reduction::Prod, true, [f, f, f, f]),
        (Reduction::Prod, false, [f, f, t, f]),
    ];
    for (red, init, want) in cases {
        let out = run(&seu12(red, init), data.clone(), &idx, upd.clone());
        assert_eq!(out.values::<bool>().unwrap(), &want, "{red:?} {init}");
    }
}

#[test]
fn nan_update_poisons_max_and_later_update_replaces_it() {
    let out = run(
        &seu12(Reduction::Max, true),
        f32s(&[2], &[1.0, f32::NAN]),
        &[0, 1, 0],
        f32s(&[3], &[f32::NAN, 5.0, 2.0]),
    );
    assert_eq!(out.values::<f32>().unwrap(), &[2.0, 5.0]);
}

/// f16 2048 plus eight 1.0 is 2056 when accumulated in f32 and rounded once (each step
/// in f16 would stay at 2048).
#[test]
fn f16_accumulates_in_f32() {
    use half::f16;
    let data = Tensor::from_f16(vec![1], vec![f16::from_f32(2048.0)]).unwrap();
    let upd = Tensor::from_f16(vec![8], vec![f16::ONE; 8]).unwrap();
    let out = run(&seu12(Reduction::Sum, true), data, &[0; 8], upd);
    assert_eq!(out.values::<f16>().unwrap(), &[f16::from_f32(2056.0)]);
}

/// Indices longer than data along the axis, smaller elsewhere (op_reference case 5).
#[test]
fn axis_1_with_duplicates_and_smaller_indices() {
    let op = seu12(Reduction::Sum, false);
    let out = eval1(
        &op,
        vec![
            i32s(&[2, 2, 1], &[1, 2, 3, 4]),
            i64s(&[1, 5, 1], &[0, 0, 1, 1, 1]),
            i32s(&[1, 5, 1], &[50, 51, 10, 20, 30]),
            i64s(&[1], &[1]),
        ],
    )
    .unwrap();
    assert_eq!(out.values::<i32>().unwrap(), &[101, 60, 3, 4]);
}

#[test]
fn out_of_range_index_names_position_and_value() {
    let op = seu12(Reduction::None, true);
    let e = eval1(
        &op,
        vec![
            f32s(&[2, 2], &[0.0; 4]),
            i64s(&[2, 2], &[0, 1, -3, 0]),
            f32s(&[2, 2], &[0.0; 4]),
            i64s(&[], &[0]),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
    assert_eq!(
        e.message,
        "index -3 at position [1,0] of input 1 (indices) is out of range [-2, 1] for axis 0 of size 2"
    );
}

/// Over Tuning::BUCKETED_MIN_INDICES indices, 1-D-like scatters take the bucketed path at two
/// threads and the lean or single-task paths at one: independent implementations that
/// must agree bit for bit, and with a plain sequential loop. The shapes cover its
/// branches: a flat histogram in two buckets and two rounds (the second partial), a
/// flat one in six buckets and one round (output over Tuning::ROUNDS_MAX_OUTPUT_BYTES), and
/// [targets, 3] ones, whose offsets are not the targets, in two and in four buckets.
#[test]
fn bucketed_path_agrees_with_sequential() {
    let n = Tuning::ROUND_POSITIONS + 4097;
    for (targets, inner) in [
        (3usize << 16, 1usize),
        (6 << 20, 1),
        (3 << 16, 3),
        (2 << 20, 3),
    ] {
        let len = n / inner * inner;
        let idx: Vec<i64> = (0..len as i64)
            .map(|i| (i * 2_654_435_761) % targets as i64 - (targets / 2) as i64)
            .collect();
        let upd: Vec<f32> = (0..len).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
        let data = vec![1.0f32; targets * inner];
        for red in [Reduction::Sum, Reduction::Max, Reduction::Mean] {
            let case = Scatter {
                init: false,
                inner,
                ..Scatter::new(red, &data, &idx, &upd)
            };
            case.check(&format!("{targets}x{inner}"), &on(&[1, 2]));
        }
    }
}

/// A last round shorter than the thread count leaves some parts without positions:
/// their lists from the round before must not be applied a second time. (Before the
/// parallel driver refilled every part, the second thread's lists were applied twice.)
#[test]
fn bucketed_last_round_shorter_than_the_thread_count() {
    for extra in [1usize, 2] {
        let n = Tuning::ROUND_POSITIONS + extra;
        let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 4096).collect();
        let (data, upd) = ([0.0f32; 4096], vec![1.0f32; n]);
        let case = Scatter::new(Reduction::Sum, &data, &idx, &upd);
        case.check(&format!("{extra} past a round"), &on(&[1, 2, 3]));
    }
}

/// Out-of-range indices in both parts of the second round: the error names the first.
#[test]
fn bucketed_path_reports_the_first_bad_index() {
    let n = Tuning::ROUND_POSITIONS + Tuning::BUCKETED_MIN_INDICES;
    let mut idx: Vec<i64> = (0..n as i64).map(|i| i % 1000).collect();
    idx[n - 7] = 5000;
    idx[Tuning::ROUND_POSITIONS + 3] = -1001;
    let (data, upd) = ([0.0f32; 1000], vec![1.0f32; n]);
    for run in on(&[1, 2]) {
        let e = Scatter::new(Reduction::Sum, &data, &idx, &upd)
            .run(run)
            .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
        assert_eq!(
            e.message,
            format!(
                "index -1001 at position [{}] of input 1 (indices) is out of range [-1000, 999] for axis 0 of size 1000",
                Tuning::ROUND_POSITIONS + 3
            )
        );
    }
}

/// Large enough for the parallel paths (outer rows, inner columns, target ranges): one
/// thread and two against the spec's loop, without the initial values.
#[test]
fn parallel_splits_agree_with_one_thread() {
    let n = 1 << 16;
    let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1000 - 500).collect();
    let upd: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 0.1).collect();
    // (index columns, axis, data length): [1000] <- [n]; [1000, n/64] <- [64, n/64] along
    // axis 0; [n/64, 1000] <- [n/64, 64] along axis 1.
    for (inner, axis, data_len) in [
        (1, 0, 1000),
        (n / 64, 0, 1000 * n / 64),
        (64, 1, n / 64 * 1000),
    ] {
        for red in [
            Reduction::Sum,
            Reduction::Mean,
            Reduction::None,
            Reduction::Max,
        ] {
            let data = vec![1.5f32; data_len];
            let case = Scatter {
                init: false,
                inner,
                axis,
                ..Scatter::new(red, &data, &idx, &upd)
            };
            case.check(&format!("{inner} columns, axis {axis}"), &on(&[1, 2]));
        }
    }
}

/// Issue 12's index distributions over two rounds of the bucketed path, whose bucket
/// boundaries follow a sample of each round: sums (order-sensitive in f32), maxima and means
/// bit-identical to the sequential reference at 1, 2 and 3 threads.
#[test]
fn every_index_distribution_matches_the_sequential_reference() {
    let targets = 100_000usize;
    let n = Tuning::ROUND_POSITIONS + Tuning::ROUND_POSITIONS / 4;
    // A small generator: the test needs spread, not quality.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let uniform: Vec<i64> = (0..n).map(|_| (unit() * targets as f64) as i64).collect();
    let mut sorted = uniform.clone();
    sorted.sort_unstable();
    let distributions: Vec<(&str, Vec<i64>)> = vec![
        (
            "skewed",
            (0..n)
                .map(|_| (targets as f64 * unit().powi(3)) as i64)
                .collect(),
        ),
        ("equal", vec![targets as i64 / 3; n]),
        ("reversed", sorted.iter().rev().copied().collect()),
        ("sorted", sorted),
        (
            "hot",
            uniform
                .iter()
                .enumerate()
                .map(|(i, &v)| if i % 2 == 0 { (i as i64 % 8) * 977 } else { v })
                .collect(),
        ),
        ("uniform", uniform),
    ];
    let upd = mixed_f32(n);
    let data = vec![0.25f32; targets];
    // 1-D runs the scan path; [targets / 2, 2] the bucketed one.
    for (name, idx) in &distributions {
        for red in [Reduction::Sum, Reduction::Max, Reduction::Mean] {
            for inner in [1, 2] {
                let idx: Vec<i64> = idx.iter().map(|&v| v % (targets / inner) as i64).collect();
                let case = Scatter {
                    init: false,
                    inner,
                    ..Scatter::new(red, &data, &idx, &upd)
                };
                case.check(&format!("{name}, {inner} columns"), &on(&[1, 2, 3]));
            }
        }
    }
}

/// Long runs of one target take the lean loop's register-carried path: the same sums as
/// applying each update in turn (a run that ends, resumes and mixes in negative indices),
/// and an index out of range inside a run is still the error, at its position.
#[test]
fn runs_of_one_target_sum_in_order_and_report_bad_indices() {
    let n = 10_000;
    let mut idx = vec![4i64; n];
    idx[3000..3100].fill(7);
    // Element 4 again, spelled from the end.
    idx[6000..9000].fill(-6);
    let upd: Vec<f32> = (0..n)
        .map(|i| ((i * 13) % 17) as f32 * 0.1 + 0.05)
        .collect();
    let data = [1.0f32; 10];
    Scatter::new(Reduction::Sum, &data, &idx, &upd).check("runs of one target", &on(&[1, 2]));
    idx[2500] = 99;
    Scatter::new(Reduction::Sum, &data, &idx, &upd).check_error(99, 2500, &on(&[1, 2]));
}

/// Sorted indices onto an output too large for the size rule (12 MiB) take the lean pass
/// by locality at two threads; scattered ones stay bucketed. Both equal the sequential sums.
#[test]
fn local_indices_on_a_large_output_match_the_sequential_reference() {
    let targets = 3usize << 20;
    let n = Tuning::BUCKETED_MIN_INDICES;
    let sorted: Vec<i64> = (0..n as i64).map(|i| i * 11).collect();
    let scattered: Vec<i64> = (0..n as i64)
        .map(|i| (i * 2_654_435_761) % targets as i64)
        .collect();
    let upd: Vec<f32> = (0..n).map(|i| (i % 23) as f32 * 0.07).collect();
    let data = vec![0.5f32; targets];
    for (name, idx) in [("sorted", sorted), ("scattered", scattered)] {
        let case = Scatter {
            init: false,
            ..Scatter::new(Reduction::Sum, &data, &idx, &upd)
        };
        case.check(name, &on(&[2]));
    }
}

/// Row scatters (torch's `index.unsqueeze(1).expand(-1, d)`): every line of inner columns
/// holds one index, so the row path moves whole rows. Sums, means, maxima and `none`,
/// with and without the initial values, equal the sequential reference bit for bit at 1, 2
/// and 3 threads; one line that is not uniform sends the same call to the element-wise kernel
/// with the same result; a bad index is reported at its position either way.
#[test]
fn row_scatters_match_the_sequential_reference() {
    let (lines, cols, rows) = (1usize << 13, 24usize, 700usize);
    let line_index: Vec<i64> = (0..lines as i64)
        .map(|i| (i * i * 7919) % 1400 - 700)
        .collect();
    let mut idx: Vec<i64> = line_index.iter().flat_map(|&t| [t; 24]).collect();
    let upd: Vec<f32> = (0..lines * cols)
        .map(|i| ((i * 31) % 17) as f32 * 0.37 - 2.0)
        .collect();
    let data: Vec<f32> = (0..rows * cols).map(|i| (i % 5) as f32 * 0.25).collect();
    for not_uniform in [false, true] {
        if not_uniform {
            idx[(lines / 2) * cols + 5] += 1;
        }
        for red in [
            Reduction::Sum,
            Reduction::Mean,
            Reduction::None,
            Reduction::Max,
        ] {
            for init in [false, true] {
                let case = Scatter {
                    init,
                    inner: cols,
                    ..Scatter::new(red, &data, &idx, &upd)
                };
                let what = format!("init={init} not_uniform={not_uniform}");
                case.check(&what, &on(&[1, 2, 3]));
            }
        }
    }
    // A bad index in a uniform line, after the lines of the first thread's part.
    let mut bad = line_index
        .iter()
        .flat_map(|&t| [t; 24])
        .collect::<Vec<i64>>();
    let at = (lines * 3 / 4) * cols;
    bad[at..at + cols].fill(900);
    let case = Scatter {
        inner: cols,
        ..Scatter::new(Reduction::Sum, &data, &bad, &upd)
    };
    for run in on(&[1, 2, 3]) {
        let e = case.run(run).unwrap_err();
        assert_out_of_range(&e, 900, format!("{},0", lines * 3 / 4), "");
    }
}

/// Local indices run in one chunk of positions per thread when the chunks' target ranges
/// are disjoint, and in one task when not. Every case equals the sequential reference bit
/// for bit at 1, 2 and 3 threads: sorted with runs of about five duplicates (so an even
/// split mostly falls inside a run and must move to its end), reverse-sorted, all negative,
/// mixed signs for the same targets (their span is found target by target), and the cases
/// that fall back: all indices equal (no split point), two sorted halves (overlapping
/// chunks).
#[test]
fn local_chunks_match_the_sequential_reference() {
    let n = Tuning::BUCKETED_MIN_INDICES + 1234;
    let along = 50_000usize;
    let sorted: Vec<i64> = (0..n).map(|i| (i * along / n) as i64).collect();
    let signed = |v: i64| v - along as i64;
    let cases: Vec<(&str, Vec<i64>)> = vec![
        ("reversed", sorted.iter().rev().copied().collect()),
        ("negative", sorted.iter().map(|&v| signed(v)).collect()),
        (
            "mixed signs",
            sorted
                .iter()
                .enumerate()
                .map(|(i, &v)| if i % 3 == 0 { signed(v) } else { v })
                .collect(),
        ),
        ("equal", vec![7; n]),
        (
            "two sorted halves",
            (0..n).map(|i| ((i % (n / 2)) * along / n) as i64).collect(),
        ),
        ("sorted", sorted),
    ];
    let upd: Vec<f32> = (0..n)
        .map(|i| ((i * 29) % 97) as f32 * 0.011 - 0.5)
        .collect();
    let data: Vec<f32> = (0..along).map(|i| (i % 13) as f32 * 0.1).collect();
    for (name, idx) in &cases {
        for red in [Reduction::Sum, Reduction::Max] {
            Scatter::new(red, &data, idx, &upd).check(name, &on(&[1, 2, 3]));
        }
    }
}

/// An index out of range among sorted ones: no chunk runs, and the one-task pass reports
/// the first bad position whatever the thread count, also when a later chunk holds it.
#[test]
fn local_chunks_leave_a_bad_index_to_the_lean_pass() {
    let n = Tuning::BUCKETED_MIN_INDICES + 10;
    let along = 40_000usize;
    let mut idx: Vec<i64> = (0..n).map(|i| (i * along / n) as i64).collect();
    let bad = n * 3 / 4;
    idx[bad] = along as i64;
    let (upd, data) = (vec![1.0f32; n], vec![0.0f32; along]);
    let case = Scatter::new(Reduction::Sum, &data, &idx, &upd);
    case.check_error(along as i64, bad, &on(&[1, 2, 3]));
}

/// Long runs of one target on integers (folded as one vector reduction per block) give the
/// element-by-element results: wrapping sums and products, min, max, the last update for
/// none; with the target written as a negative index too, and with a run broken by another
/// target in mid-block (that block takes the ordinary loop).
#[test]
fn integer_runs_fold_as_the_sequential_loop() {
    use Reduction::*;
    let n = 5003usize;
    let upd: Vec<i32> = (0..n)
        .map(|i| (i as i32).wrapping_mul(0x3779_b9f1) >> 3)
        .collect();
    for (target, broken) in [(3, false), (-5, false), (3, true)] {
        let idx: Vec<i64> = (0..n)
            .map(|i| if broken && i == 1500 { 1 } else { target })
            .collect();
        for red in [None, Sum, Prod, Min, Max] {
            let case = format!("target {target}, broken {broken}");
            Scatter::new(red, &[7i32; 8], &idx, &upd).check(&case, &on(&[1, 2]));
        }
    }
}
