//! Split rounds ([`super::split`]): flat histograms on small outputs, each round shared
//! between a lean task and partitioning tasks that claim its positions as they go. Checked
//! against the spec's loop, one update at a time.

use super::runtime::ROUND_POSITIONS;
use super::tests_eval::{assert_out_of_range, same_bits, scatter_1d, sequential_with_init};
use super::*;

/// `n` indices spread over `0..along` by a multiplicative hash: no two nearby positions on
/// nearby targets, so the runs go bucketed or in split rounds, not lean.
fn scattered(n: usize, along: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (i * 2_654_435_761) % along as i64)
        .collect()
}

/// A flat histogram with enough positions for split rounds, on an output small enough for
/// them: one task's lean share and the other tasks' lists, applied after it, give the
/// sequential sums bit for bit, at 2 and 3 threads, with a last round that is partial.
#[test]
fn split_rounds_match_the_sequential_reference() {
    let n = super::runtime::SPLIT_MIN_POSITIONS + ROUND_POSITIONS / 3;
    let along = 100_000usize;
    let idx = scattered(n, along);
    let upd: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 * 0.013 - 0.6)
        .collect();
    let data = vec![0.5f32; along];
    for red in [Reduction::Sum, Reduction::Max] {
        let want = sequential_with_init(red, &data, &idx, &upd);
        for threads in [2, 3] {
            let out = scatter_1d(red, &data, &idx, &upd, threads).unwrap();
            assert!(same_bits(&out, &want), "{red:?} at {threads} threads");
        }
    }
}

/// Bad indices in a split round, one early and one late in the same round (where the
/// lean task and a partitioning task may each meet one), and one in a later round: the
/// first is reported, at 2 and 3 threads, however the tasks' claims fell (run a few times).
#[test]
fn split_rounds_report_the_first_bad_index() {
    let n = super::runtime::SPLIT_MIN_POSITIONS + 1000;
    let along = 100_000usize;
    let mut idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % along as i64).collect();
    let round = ROUND_POSITIONS;
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

/// f16 and bf16 histograms that run in rounds read their updates widened a block at a time
/// (`crate::updates::Widening`) instead of widened whole first: split rounds on a small
/// output, bucketed rounds on one past the split limit (10 MB as f32). Sums and maxima equal
/// the spec's loop run in f32 on the widened values and rounded once per element, bit for
/// bit, at 2 and 3 threads, with a bad index reported as before.
#[test]
fn half_updates_widened_by_block_match_the_f32_reference() {
    use crate::reduce::ReduceKernel;
    use half::{bf16, f16};
    use irun_tensor::Tensor;
    let split_n = super::runtime::SPLIT_MIN_POSITIONS + ROUND_POSITIONS / 3;
    let bucketed_n = super::runtime::BUCKETED_MIN_INDICES + 4321;
    for (along, n) in [(100_000usize, split_n), (2_500_000, bucketed_n)] {
        let idx = scattered(n, along);
        let upd: Vec<f32> = (0..n)
            .map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0)
            .collect();
        let data: Vec<f32> = (0..along).map(|i| (i % 7) as f32 - 3.0).collect();
        for red in [Reduction::Sum, Reduction::Max] {
            for (name, round) in [
                (
                    "f16",
                    (|v: f32| f16::from_f32(v).to_f32()) as fn(f32) -> f32,
                ),
                ("bf16", |v: f32| bf16::from_f32(v).to_f32()),
            ] {
                let (data, upd): (Vec<f32>, Vec<f32>) = (
                    data.iter().map(|&v| round(v)).collect(),
                    upd.iter().map(|&v| round(v)).collect(),
                );
                let want: Vec<f32> = sequential_with_init(red, &data, &idx, &upd)
                    .into_iter()
                    .map(round)
                    .collect();
                let tensor = |v: &[f32]| {
                    match name {
                        "f16" => Tensor::from_f16(
                            vec![v.len()],
                            v.iter().map(|&x| f16::from_f32(x)).collect(),
                        ),
                        _ => Tensor::from_bf16(
                            vec![v.len()],
                            v.iter().map(|&x| bf16::from_f32(x)).collect(),
                        ),
                    }
                    .unwrap()
                };
                // The kernel itself takes these runs by block on two threads (`run_from`
                // answers), with the same bits.
                let indices = crate::testing::i64s(&[n], &idx);
                let kernel = super::runtime::ElementsKernel {
                    indices: crate::runtime_indices(&indices).unwrap(),
                    indices_shape: &[n],
                    geometry: super::geometry::Geometry::new(&[along], &[n], &[n], 0).unwrap(),
                    mean: false,
                    use_init_val: true,
                    track_counts: false,
                    plan: None,
                    line_indices: false,
                };
                let mut direct = data.clone();
                let halves: Vec<f16> = upd.iter().map(|&v| f16::from_f32(v)).collect();
                let source = crate::updates::Widening(&halves[..]);
                let ran = crate::testing::on_threads(2, || match red {
                    Reduction::Sum => {
                        kernel.run_from::<f32, crate::reduce::Sum, _>(&mut direct, &source)
                    }
                    _ => {
                        kernel.run_from::<f32, crate::reduce::MaxElements, _>(&mut direct, &source)
                    }
                });
                assert!(
                    matches!(ran, Some(Ok(()))),
                    "{name} {red:?} onto {along}: by block"
                );
                let direct: Vec<f32> = direct.into_iter().map(round).collect();
                if name == "f16" {
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert!(bits(&direct) == bits(&want), "{red:?} onto {along}, direct");
                }
                let mut bad = idx.clone();
                bad[n - 7] = along as i64;
                for threads in [2, 3] {
                    let case = format!("{name} {red:?} onto {along} at {threads} threads");
                    let inputs = |idx: &[i64]| {
                        vec![
                            tensor(&data),
                            crate::testing::i64s(&[n], idx),
                            tensor(&upd),
                            crate::testing::i64s(&[], &[0]),
                        ]
                    };
                    let op = super::seu12(red, true);
                    let out = crate::testing::eval_with(&op, inputs(&idx), threads).unwrap();
                    let got: Vec<f32> = match name {
                        "f16" => out
                            .values::<f16>()
                            .unwrap()
                            .iter()
                            .map(|h| h.to_f32())
                            .collect(),
                        _ => out
                            .values::<bf16>()
                            .unwrap()
                            .iter()
                            .map(|h| h.to_f32())
                            .collect(),
                    };
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert!(bits(&got) == bits(&want), "{case}");
                    let e = crate::testing::eval_with(&op, inputs(&bad), threads).unwrap_err();
                    assert_out_of_range(&e, along, n - 7, &case);
                }
            }
        }
    }
}

/// Rounds hold 2^20 pairs of 8 bytes, 2^19 of 12 (f64, i64 updates), never fewer than a
/// quarter of 2^20.
#[test]
fn rounds_shorten_for_wide_pairs() {
    use super::buckets::Pair;
    use super::runtime::round_positions;
    assert_eq!(
        round_positions(std::mem::size_of::<Pair<f32>>()),
        ROUND_POSITIONS
    );
    assert_eq!(
        round_positions(std::mem::size_of::<Pair<i8>>()),
        ROUND_POSITIONS
    );
    assert_eq!(
        round_positions(std::mem::size_of::<Pair<f64>>()),
        ROUND_POSITIONS / 2
    );
    assert_eq!(round_positions(1 << 20), ROUND_POSITIONS / 4);
}
