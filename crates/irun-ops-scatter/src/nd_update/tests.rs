//! ScatterNDUpdate's tests: inference (valid and invalid shapes) and evaluation.

use super::*;
use crate::testing::{assert_same_bits, err, fact, infer1};

#[test]
fn ranges_share_the_tuples_out() {
    // Half of the tuples at offset 0, the rest spread out.
    let offsets: Vec<usize> = (0..1000)
        .map(|i| if i % 2 == 0 { 0 } else { i * 97 % 100_000 })
        .collect();
    let shares = |ranges, copying| Shares {
        ranges,
        scattered: 2,
        copying,
    };
    let r = balanced_ranges(100_000, 16, &offsets, shares(2, false)).ranges;
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].start, r[1].end), (0, 100_000));
    assert_eq!(r[0].end, r[1].start);
    assert!(
        r[0].len() < 1000,
        "the hot start is a range of its own: {r:?}"
    );
    // Every offset in one place: one range holds it, the ranges still cover the output.
    let r = balanced_ranges(10, 1, &[4; 100], shares(3, false)).ranges;
    assert_eq!(r.first().map(|r| r.start), Some(0));
    assert_eq!(r.last().map(|r| r.end), Some(10));
    assert!(r
        .windows(2)
        .all(|w| w[0].end == w[1].start && !w[0].is_empty()));
}
use irun_tensor::ElementType::*;
use irun_tensor::Tensor;

fn both() -> [ScatterNDUpdate; 2] {
    [
        ScatterNDUpdate {
            version: 3,
            reduction: Reduction::None,
        },
        ScatterNDUpdate {
            version: 15,
            reduction: Reduction::Max,
        },
    ]
}

fn snd(op: &ScatterNDUpdate, data: &str, idx: &str, upd: &str) -> Result<Fact, OpError> {
    infer1(op, &[fact(F32, data), fact(I32, idx), fact(F32, upd)])
}

/// type_prop scatter_nd_update_* failures.
#[test]
fn invalid_cases() {
    for op in both() {
        let e = err(infer1(
            &op,
            &[fact(F32, "3,3"), fact(F16, "1"), fact(F32, "3")],
        ));
        assert!(e
            .message
            .contains("Indices element type must be i64 or i32"));
        let e = err(snd(&op, "3,3,3", "1", "3,3,3"));
        assert!(e.message.contains("Rank of updates must be rank of inputs + rank of indices - last dimension of indices - 1"), "{}", e.message);
        let e = err(infer1(
            &op,
            &[fact(F32, "3,3,3"), fact(I32, "1"), fact(I32, "3,3")],
        ));
        assert!(e
            .message
            .contains("Updates element type must be the same as inputs"));
        let e = err(snd(&op, "3,3,3", "1", "2,3"));
        assert!(e.message.contains(
            "updates_shape[indices_rank-1:] shape must be input_shape[indices_shape[-1]:]"
        ));
        let e = err(snd(&op, "3,3,3", "2,4", "2"));
        assert!(e
            .message
            .contains("Last dimension of indices can be at most the rank of inputs"));
        let e = err(snd(&op, "3,3", "", "3"));
        assert!(e.message.contains("at least 1"));
        let e = err(snd(&op, "4,4", "3,1", "2,4"));
        assert!(e
            .message
            .contains("updates_shape[0:indices_rank-1] shape must be indices_shape[:-1]"));
    }
}

/// type_prop data_input_partial_shape_and_symbols_propagation, *_is_dynamic,
/// indicies_input_has_interval_dimensions, updates_input_is_scalar, *_dynamic_type, default_ctor.
#[test]
fn valid_cases() {
    for op in both() {
        let fixture = "2..5,2,4..10";
        assert_eq!(
            snd(&op, fixture, "3,2", "3,5").unwrap().shape.to_string(),
            "[2..5,2,4..10]"
        );
        assert_eq!(
            snd(&op, fixture, "...", "3,5").unwrap().shape.to_string(),
            "[2..5,2,4..10]"
        );
        assert_eq!(
            snd(&op, fixture, "3,2", "...").unwrap().shape.to_string(),
            "[2..5,2,4..10]"
        );
        assert_eq!(
            snd(&op, "3,2,10", "0..3,1", "3,2,8..10")
                .unwrap()
                .shape
                .to_string(),
            "[3,2,10]"
        );
        assert!(snd(&op, "3,2,10", "3", "").is_ok());
        let out = infer1(
            &op,
            &[
                fact(Dynamic, "3,4"),
                fact(Dynamic, "2,1"),
                fact(Dynamic, "2,4"),
            ],
        )
        .unwrap();
        assert_eq!(out.ty, Dynamic);
        assert_eq!(
            snd(&op, "2,3,5,1", "1,3", "1,1").unwrap().shape.to_string(),
            "[2,3,5,1]"
        );
        // spec example 2 and the PointPillars shape.
        assert!(snd(&op, "4,4,4", "2,1", "2,4,4").is_ok());
        assert!(snd(&op, "214272,64", "12000,1", "12000,64").is_ok());
    }
}

/// Stricter than OpenVINO: with an expected 0-D update, only a single element is accepted.
#[test]
fn zero_d_update_loophole_is_closed() {
    for op in both() {
        assert!(snd(&op, "4,5", "2", "").is_ok());
        assert!(snd(&op, "4,5", "2", "1").is_ok());
        let e = err(snd(&op, "4,5", "2", "2,7"));
        assert!(e.message.contains("single element"), "{}", e.message);
    }
}

mod eval {
    use super::*;
    use crate::testing::{eval1, f32s, i32s, i64s};

    fn nd(reduction: Reduction) -> ScatterNDUpdate {
        ScatterNDUpdate {
            version: 15,
            reduction,
        }
    }

    /// Reference doc 2.3 verified values (the spec's example 1 and 4 are wrong).
    #[test]
    fn v15_examples_with_duplicates_and_negative_indices() {
        for (red, want) in [
            (Reduction::None, [50, 40, 20, 4]),
            (Reduction::Sum, [61, 72, 23, 4]),
            (Reduction::Sub, [-59, -68, -17, 4]),
            (Reduction::Prod, [500, 2400, 60, 4]),
        ] {
            let out = eval1(
                &nd(red),
                vec![
                    i32s(&[4], &[1, 2, 3, 4]),
                    i64s(&[5, 1], &[0, 2, -3, -3, 0]),
                    i32s(&[5], &[10, 20, 30, 40, 50]),
                ],
            )
            .unwrap();
            assert_eq!(out.values::<i32>().unwrap(), &want, "{red:?}");
        }
    }

    /// op_reference `4x4_v2`-style slices: k = 2 of a rank-3 tensor.
    #[test]
    fn slices_of_rank_3() {
        let data: Vec<i32> = (0..18).collect();
        let out = eval1(
            &nd(Reduction::None),
            vec![
                i32s(&[2, 3, 3], &data),
                i32s(&[2, 2], &[1, 2, 0, 0]),
                i32s(&[2, 3], &[91, 92, 93, 81, 82, 83]),
            ],
        );
        let out = out.unwrap();
        let v = out.values::<i32>().unwrap();
        assert_eq!(&v[0..3], &[81, 82, 83]);
        assert_eq!(&v[15..18], &[91, 92, 93]);
        assert_eq!(v[3], 3);
    }

    #[test]
    fn nan_accumulator_stays_and_nan_update_is_ignored() {
        let out = eval1(
            &nd(Reduction::Max),
            vec![
                f32s(&[2], &[1.0, f32::NAN]),
                i64s(&[3, 1], &[0, 1, 0]),
                f32s(&[3], &[f32::NAN, 5.0, 2.0]),
            ],
        )
        .unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!(v[0], 2.0);
        assert!(v[1].is_nan());
    }

    #[test]
    fn out_of_bounds_tuple_is_an_error() {
        let e = eval1(
            &nd(Reduction::None),
            vec![
                f32s(&[2, 3], &[0.0; 6]),
                i64s(&[1, 2], &[1, 3]),
                f32s(&[1], &[10.0]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
        assert!(
            e.message.contains("index 3 at position [0,1]"),
            "{}",
            e.message
        );
    }

    /// Many one-coordinate tuples (several blocks of offsets, some negative): the sum
    /// matches a sequential reference, and one coordinate out of range far in is reported
    /// at its own position, whichever block holds it.
    #[test]
    fn one_coordinate_tuples_in_blocks() {
        let (rows, cols, n) = (300usize, 3usize, 20_000usize);
        let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919 % 600) - 300).collect();
        let upd: Vec<i32> = (0..(n * cols) as i32).map(|v| v % 11 - 5).collect();
        let data: Vec<i32> = (0..(rows * cols) as i32).collect();
        let mut want = data.clone();
        for (t, &i) in idx.iter().enumerate() {
            let r = if i < 0 { i + rows as i64 } else { i } as usize;
            for c in 0..cols {
                want[r * cols + c] = want[r * cols + c].wrapping_add(upd[t * cols + c]);
            }
        }
        let run = |idx: &[i64]| {
            eval1(
                &nd(Reduction::Sum),
                vec![
                    i32s(&[rows, cols], &data),
                    i64s(&[n, 1], idx),
                    i32s(&[n, cols], &upd),
                ],
            )
        };
        let out = run(&idx).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &want[..]);
        for bad in [300i64, -301] {
            let mut idx = idx.clone();
            idx[13_001] = bad;
            let e = run(&idx).unwrap_err();
            assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
            let at = format!("index {bad} at position [13001,0]");
            assert!(e.message.contains(&at), "{}", e.message);
        }
    }

    #[test]
    fn boolean_sub_is_xor() {
        let b = |v: &[bool]| Tensor::from_bool(vec![v.len()], v.to_vec()).unwrap();
        let out = eval1(
            &nd(Reduction::Sub),
            vec![
                b(&[false, true]),
                i64s(&[4, 1], &[0, 0, 1, 1]),
                b(&[true; 4]),
            ],
        )
        .unwrap();
        assert_eq!(out.values::<bool>().unwrap(), &[false, true]);
    }

    #[test]
    fn skewed_rows_match_the_sequential_reference_at_any_thread_count() {
        let rows = 50_000usize;
        let n = 40_000usize;
        // A power law over rows (most tuples in the first rows) and one hot row.
        let idx: Vec<i64> = (0..n)
            .map(|i| {
                let u = ((i * 7919) % n) as f64 / n as f64;
                if i % 5 == 0 {
                    777
                } else {
                    (rows as f64 * u * u * u) as i64
                }
            })
            .collect();
        let upd: Vec<f32> = (0..n * 4).map(|i| (i % 29) as f32 * 0.31 - 4.0).collect();
        let mut want = vec![0.5f32; rows * 4];
        for (p, &i) in idx.iter().enumerate() {
            for c in 0..4 {
                want[i as usize * 4 + c] += upd[p * 4 + c];
            }
        }
        for threads in [1, 2, 3] {
            let out = crate::testing::eval_with(
                &nd(Reduction::Sum),
                vec![
                    f32s(&[rows, 4], &vec![0.5; rows * 4]),
                    i64s(&[n, 1], &idx),
                    f32s(&[n, 4], &upd),
                ],
                threads,
            )
            .unwrap();
            let got = out.values::<f32>().unwrap();
            assert_same_bits(
                got,
                &want,
                format!("{threads} threads against the sequential reference"),
            );
        }
    }

    /// Data that another holder keeps (a model input) is not updated in place: the output is
    /// filled from it as the slices land ([`crate::fill::Window`]). Whatever the order of
    /// the rows (ascending or descending, with runs of duplicates or not, all one row,
    /// scattered, a hot row among them) and
    /// with slices (24 elements) that range cuts split, every element is the spec's
    /// sequential result, bit for bit, at 1-3 threads; the shared data is untouched.
    #[test]
    fn shared_data_is_filled_as_the_slices_land() {
        let (rows, s, n) = (20_000usize, 24usize, 12_000usize);
        let scattered: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % rows as i64).collect();
        let mut ascending = scattered.clone();
        ascending.sort();
        let descending: Vec<i64> = ascending.iter().rev().copied().collect();
        let hot: Vec<i64> = (scattered.iter().enumerate())
            .map(|(i, &r)| if i % 3 == 0 { 4321 } else { r })
            .collect();
        // Runs of about four tuples on one row, some shorter, some longer.
        let mut duplicates: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 3001).collect();
        duplicates.sort();
        // Descending runs are applied a block of whole runs at a time, from the last block
        // to the first: a block that cut a run would apply its end before its start.
        let descending_duplicates: Vec<i64> = duplicates.iter().rev().copied().collect();
        let orders = [
            ("ascending", ascending),
            ("ascending with duplicates", duplicates),
            ("descending with duplicates", descending_duplicates),
            ("descending", descending),
            ("one row", vec![-7; n]),
            ("scattered", scattered),
            ("hot", hot),
        ];
        let init: Vec<f32> = (0..rows * s).map(|i| (i % 13) as f32 - 6.0).collect();
        let upd: Vec<f32> = (0..n * s).map(|i| (i % 31) as f32 * 0.37 - 5.0).collect();
        for (name, idx) in &orders {
            for red in [Reduction::None, Reduction::Sum, Reduction::Max] {
                let mut want = init.clone();
                for (p, &i) in idx.iter().enumerate() {
                    let row = i.rem_euclid(rows as i64) as usize;
                    for c in 0..s {
                        let (acc, u) = (want[row * s + c], upd[p * s + c]);
                        want[row * s + c] = match red {
                            Reduction::None => u,
                            Reduction::Sum => acc + u,
                            _ => acc.max(u),
                        };
                    }
                }
                let data = Arc::new(f32s(&[rows, s], &init));
                let inputs = [
                    data.clone(),
                    Arc::new(i64s(&[n, 1], idx)),
                    Arc::new(f32s(&[n, s], &upd)),
                ];
                for threads in [1, 2, 3] {
                    let out = crate::testing::on_threads(threads, || nd(red).eval(inputs.to_vec()))
                        .unwrap();
                    let got = out[0].values::<f32>().unwrap();
                    assert_same_bits(
                        got,
                        &want,
                        format!("{name}, {red:?}, {threads} threads against the sequential result"),
                    );
                }
                assert_eq!(
                    data.values::<f32>().unwrap(),
                    &init[..],
                    "{name}: data changed"
                );
            }
        }
    }

    /// Descending rows with runs of duplicates, enough of them per range (slices of 4) that
    /// the blocks of whole runs the apply visits from last to first are cut inside runs:
    /// `none` (the last update wins) and sums equal the spec's loop bit for bit, on shared
    /// data (filled as the slices land) and on owned data, at 1-3 threads.
    #[test]
    fn descending_runs_keep_their_order() {
        let (rows, s, n) = (20_000usize, 4usize, 60_000usize);
        let mut idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % rows as i64).collect();
        idx.sort();
        idx.reverse();
        let init: Vec<f32> = (0..rows * s).map(|i| (i % 13) as f32 - 6.0).collect();
        let upd: Vec<f32> = (0..n * s).map(|i| (i % 31) as f32 * 0.37 - 5.0).collect();
        for red in [Reduction::None, Reduction::Sum] {
            let mut want = init.clone();
            for (p, &i) in idx.iter().enumerate() {
                for c in 0..s {
                    let (o, u) = (i as usize * s + c, upd[p * s + c]);
                    want[o] = if red == Reduction::None {
                        u
                    } else {
                        want[o] + u
                    };
                }
            }
            for shared in [true, false] {
                for threads in [1, 2, 3] {
                    let data = Arc::new(f32s(&[rows, s], &init));
                    let keep = shared.then(|| data.clone());
                    let inputs = vec![
                        data,
                        Arc::new(i64s(&[n, 1], &idx)),
                        Arc::new(f32s(&[n, s], &upd)),
                    ];
                    let out = crate::testing::on_threads(threads, || nd(red).eval(inputs)).unwrap();
                    let got = out[0].values::<f32>().unwrap();
                    assert_same_bits(
                        got,
                        &want,
                        format!("{red:?}, shared={shared}, {threads} threads"),
                    );
                    drop(keep);
                }
            }
        }
    }

    #[test]
    fn parallel_ranges_agree_with_one_thread() {
        let rows = 4096;
        let idx: Vec<i64> = (0..20_000).map(|i| (i * 7919) % rows - rows / 2).collect();
        let upd: Vec<f32> = (0..320_000).map(|i| i as f32 * 0.37).collect();
        for red in [Reduction::None, Reduction::Sum, Reduction::Min] {
            let out = eval1(
                &nd(red),
                vec![
                    f32s(&[rows as usize, 16], &vec![0.5; rows as usize * 16]),
                    i64s(&[20_000, 1], &idx),
                    f32s(&[20_000, 16], &upd),
                ],
            )
            .unwrap();
            // The spec's loop: each index row in order updates one data row.
            let mut want = vec![0.5f32; rows as usize * 16];
            for (p, &i) in idx.iter().enumerate() {
                let row = i.rem_euclid(rows) as usize;
                for c in 0..16 {
                    let (acc, u) = (want[row * 16 + c], upd[p * 16 + c]);
                    want[row * 16 + c] = match red {
                        Reduction::None => u,
                        Reduction::Sum => acc + u,
                        _ => acc.min(u),
                    };
                }
            }
            let got = out.values::<f32>().unwrap();
            assert_same_bits(
                got,
                &want,
                format!("{red:?} against the sequential reference"),
            );
        }
    }

    /// Tuples whose slices lie back to back in order (torch's slice assignment): the
    /// whole output replaced gives the updates; a stretch of it, the reduction over that
    /// stretch alone. Both as the spec has it, and as the unprepared run has it.
    #[test]
    fn back_to_back_slices_replace_or_reduce_one_stretch() {
        use crate::testing::eval_prepared;
        let rows = 2 * PREPARE_MIN_INDICES;
        let data = f32s(&[rows, 4], &vec![1.0; rows * 4]);
        for (first, count) in [(0, rows), (5, rows - 9)] {
            let idx: Vec<i64> = (first as i64..(first + count) as i64).collect();
            let upd: Vec<f32> = (0..count * 4).map(|i| i as f32 * 0.25).collect();
            let inputs = vec![
                data.clone(),
                i64s(&[count, 1], &idx),
                f32s(&[count, 4], &upd),
            ];
            for red in [Reduction::None, Reduction::Sum] {
                let mut want = vec![1.0f32; rows * 4];
                for (j, &u) in upd.iter().enumerate() {
                    let d = &mut want[first * 4 + j];
                    *d = if red == Reduction::None { u } else { *d + u };
                }
                let want = f32s(&[rows, 4], &want);
                assert_eq!(eval1(&nd(red), inputs.clone()).unwrap(), want);
                for threads in [1, 2] {
                    let got =
                        eval_prepared(&nd(red), inputs.clone(), &[true, true, false], threads)
                            .expect("constant indices are prepared")
                            .unwrap();
                    assert_eq!(got, want, "{red:?} from row {first} at {threads} thread(s)");
                }
            }
        }
    }

    /// Constant indices prepared (their offsets worked out at the first run) give the
    /// run's results; a bad constant gives the run's error.
    #[test]
    fn prepared_offsets_match_the_run() {
        use crate::testing::eval_prepared;
        let n = 3 * PREPARE_MIN_INDICES;
        // Every element of [n/4, 4] once, in a scrambled order; then sums with duplicates.
        let perm: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % n as i64).collect();
        let idx: Vec<i64> = perm.iter().flat_map(|&p| [p / 4, p % 4]).collect();
        let upd: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let data = f32s(&[n / 4, 4], &vec![1.0; n]);
        for red in [Reduction::None, Reduction::Sum] {
            let inputs = vec![data.clone(), i64s(&[n, 2], &idx), f32s(&[n], &upd)];
            let want = eval1(&nd(red), inputs.clone()).unwrap();
            for threads in [1, 2] {
                let got = eval_prepared(&nd(red), inputs.clone(), &[true, true, false], threads)
                    .expect("constant indices are prepared")
                    .unwrap();
                assert_eq!(got, want, "{red:?} at {threads} thread(s)");
            }
        }
        let mut bad = idx.clone();
        bad[2 * n - 1] = 4;
        let inputs = vec![data, i64s(&[n, 2], &bad), f32s(&[n], &upd)];
        let plain = eval1(&nd(Reduction::None), inputs.clone()).unwrap_err();
        let prepared = eval_prepared(&nd(Reduction::None), inputs, &[true, true, false], 1)
            .expect("prepared; the offsets are worked out at the first run")
            .unwrap_err();
        assert_eq!(format!("{prepared:?}"), format!("{plain:?}"));
    }
}
