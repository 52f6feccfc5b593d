//! f16 and bf16 reductions compute in f32, their updates widened a block at a time
//! (`crate::updates::Widening`) on every path of a flat histogram that reads them in blocks:
//! split and bucketed rounds for scattered indices, the lean pass in chunks for local ones,
//! the lean pass on one task otherwise. Each case equals the spec's loop run in f32 on the
//! widened values and rounded once per element, bit for bit, through the kernel's
//! `run_from` (which must take it, not hand it back to be widened whole) and through the op
//! at several thread counts, which also reports a bad index as before.

use half::{bf16, f16};

use super::kernel::ElementsKernel;
use super::strategy::Tuning;
use super::tests_kit::{assert_out_of_range, scattered, Scatter};
use super::*;
use crate::reduce::{MaxElements, ReduceKernel, Sum};
use crate::testing::{assert_same_bits, Narrow};
use crate::updates::Widening;

/// The kernel's `run_from` on `threads` threads with `upd` stored as `ty`: `None` if it
/// handed the run back.
fn run_from(
    ty: Narrow,
    kernel: &ElementsKernel<'_>,
    red: Reduction,
    out: &mut [f32],
    upd: &[f32],
    threads: usize,
) -> Option<Result<(), OpError>> {
    fn go<H: irun_opkit::halves::Half>(
        kernel: &ElementsKernel<'_>,
        red: Reduction,
        out: &mut [f32],
        upd: &[H],
        threads: usize,
    ) -> Option<Result<(), OpError>> {
        let source = Widening(upd);
        crate::testing::on_threads(threads, || match red {
            Reduction::Sum => kernel.run_from::<f32, Sum, _>(out, &source),
            _ => kernel.run_from::<f32, MaxElements, _>(out, &source),
        })
    }
    match ty {
        Narrow::F16 => {
            let h: Vec<f16> = upd.iter().map(|&v| f16::from_f32(v)).collect();
            go(kernel, red, out, &h, threads)
        }
        Narrow::Bf16 => {
            let h: Vec<bf16> = upd.iter().map(|&v| bf16::from_f32(v)).collect();
            go(kernel, red, out, &h, threads)
        }
    }
}

/// One case: `idx` onto `along` elements, sums and maxima, both half types; `run_from`
/// directly at each of `direct` thread counts, the op at each of `threads`.
fn check(case: &str, along: usize, idx: &[i64], direct: &[usize], threads: &[usize]) {
    let n = idx.len();
    let upd: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0)
        .collect();
    let data: Vec<f32> = (0..along).map(|i| (i % 7) as f32 - 3.0).collect();
    let indices = crate::testing::i64s(&[n], idx);
    let kernel = ElementsKernel {
        indices: crate::runtime_indices(&indices).unwrap(),
        indices_shape: &[n],
        geometry: super::geometry::Geometry::new(&[along], &[n], &[n], 0).unwrap(),
        mean: false,
        use_init_val: true,
        track_counts: false,
        plan: None,
        line_indices: false,
    };
    let mut bad = idx.to_vec();
    bad[n - 7] = along as i64;
    for red in [Reduction::Sum, Reduction::Max] {
        for ty in [Narrow::F16, Narrow::Bf16] {
            let (data, upd) = (ty.rounded(&data), ty.rounded(&upd));
            let want = ty.rounded(&Scatter::new(red, &data, idx, &upd).expected());
            let what = format!("{case}: {ty:?} {red:?}");
            for &t in direct {
                let mut out = data.clone();
                let ran = run_from(ty, &kernel, red, &mut out, &upd, t);
                assert!(matches!(ran, Some(Ok(()))), "{what}, run_from on {t}");
                let out = ty.rounded(&out);
                assert_same_bits(&out, &want, format!("{what}, run_from on {t}"));
            }
            let inputs = |idx: &[i64]| {
                vec![
                    ty.tensor(&[data.len()], &data),
                    crate::testing::i64s(&[n], idx),
                    ty.tensor(&[upd.len()], &upd),
                    crate::testing::i64s(&[], &[0]),
                ]
            };
            let op = super::seu12(red, true);
            for &t in threads {
                let out = crate::testing::eval_with(&op, inputs(idx), t).unwrap();
                assert_same_bits(&ty.values(&out), &want, format!("{what} on {t}"));
                let e = crate::testing::eval_with(&op, inputs(&bad), t).unwrap_err();
                assert_out_of_range(&e, along, n - 7, &format!("{what} on {t}"));
            }
        }
    }
}

/// Scattered indices: split rounds on a small output, bucketed rounds on one past the split
/// limit (10 MB as f32).
#[test]
fn half_updates_in_rounds_match_the_f32_reference() {
    let n = Tuning::SPLIT_MIN_POSITIONS + Tuning::ROUND_POSITIONS / 3;
    check(
        "split",
        100_000,
        &scattered(n, 100_000, None),
        &[2],
        &[2, 3],
    );
    let n = Tuning::BUCKETED_MIN_INDICES + 4321;
    check(
        "bucketed",
        2_500_000,
        &scattered(n, 2_500_000, None),
        &[2],
        &[2, 3],
    );
}

/// Local indices (monotone chunks: sorted, reverse-sorted through negative values, and
/// sorted but for one index, which makes them start again), all indices on one element and too few positions to share (the lean pass on
/// one task), and any indices on one thread.
#[test]
fn half_updates_on_lean_passes_match_the_f32_reference() {
    let n = Tuning::BUCKETED_MIN_INDICES + 999;
    let along = 200_000;
    let sorted: Vec<i64> = (0..n).map(|i| (i * along / n) as i64).collect();
    check("sorted", along, &sorted, &[1, 2, 3], &[1, 2, 3]);
    let from_end: Vec<i64> = sorted.iter().map(|&t| -1 - t).collect();
    check("reverse-sorted, negative", along, &from_end, &[2], &[2, 3]);
    // Sorted but for one index, late in the last chunk, back in the first chunk's piece:
    // the monotone chunks stop and the run starts again from the data.
    let mut stray = sorted.clone();
    stray[n * 7 / 8] = 5;
    check("sorted with a stray", along, &stray, &[2, 3], &[2, 3]);
    check(
        "all equal",
        along,
        &vec![777; Tuning::BUCKETED_MIN_INDICES + 5],
        &[2],
        &[1, 2],
    );
    check("few", 3000, &scattered(5000, 3000, None), &[1, 2], &[1, 2]);
    let n = Tuning::SPLIT_MIN_POSITIONS + 17;
    check(
        "one thread",
        100_000,
        &scattered(n, 100_000, None),
        &[1],
        &[1],
    );
}

/// Data the caller still holds is widened from where it lies and the result rounded into a
/// new tensor of its type and shape: the same bits as the reference, and the caller's data
/// unchanged, at 1 and 2 threads.
#[test]
fn held_half_data_is_left_unchanged() {
    let along = 5000;
    let mut idx = scattered(20_000, along, None);
    idx[3] = -1;
    let upd: Vec<f32> = (0..idx.len())
        .map(|i| (i % 13) as f32 * 0.5 - 3.0)
        .collect();
    let data: Vec<f32> = (0..along).map(|i| (i % 11) as f32 * 0.25).collect();
    for ty in [Narrow::F16, Narrow::Bf16] {
        let (data, upd) = (ty.rounded(&data), ty.rounded(&upd));
        let want = ty.rounded(&Scatter::new(Reduction::Sum, &data, &idx, &upd).expected());
        let held = std::sync::Arc::new(ty.tensor(&[data.len()], &data));
        for threads in [1, 2] {
            let inputs = vec![
                held.clone(),
                std::sync::Arc::new(crate::testing::i64s(&[idx.len()], &idx)),
                std::sync::Arc::new(ty.tensor(&[upd.len()], &upd)),
                std::sync::Arc::new(crate::testing::i64s(&[], &[0])),
            ];
            let op = super::seu12(Reduction::Sum, true);
            let out = crate::testing::on_threads(threads, || op.eval(inputs)).unwrap();
            let out = &out[0];
            assert_eq!(out.element_type(), held.element_type(), "{ty:?}");
            assert_eq!(out.shape(), held.shape(), "{ty:?}");
            assert_same_bits(&ty.values(out), &want, format!("{ty:?} on {threads}"));
            assert_same_bits(&ty.values(&held), &data, format!("{ty:?}: the held data"));
        }
    }
}

/// A counted half histogram (mean without the initial value) on an output past the split
/// limit runs bucketed with its counts while reading its updates a block at a time
/// (`run_from` takes it), and divides each hit element's f32 sum, taken in position order,
/// by its count once: the spec's mean, rounded once, bit for bit at 2 and 3 threads.
#[test]
fn counted_half_updates_run_bucketed_by_block() {
    let along = 2_500_000usize;
    let n = Tuning::BUCKETED_MIN_INDICES + 777;
    let idx = scattered(n, along, None);
    let upd: Vec<f32> = (0..n)
        .map(|i| ((i * 53) % 97) as f32 * 0.5 - 20.0)
        .collect();
    let data: Vec<f32> = (0..along).map(|i| (i % 5) as f32 + 0.5).collect();
    let shape = [n];
    let kernel = |indices| ElementsKernel {
        indices,
        indices_shape: &shape,
        geometry: super::geometry::Geometry::new(&[along], &[n], &[n], 0).unwrap(),
        mean: true,
        use_init_val: false,
        track_counts: true,
        plan: None,
        line_indices: false,
    };
    let indices = crate::testing::i64s(&[n], &idx);
    for ty in [Narrow::F16, Narrow::Bf16] {
        let (data, upd) = (ty.rounded(&data), ty.rounded(&upd));
        let mean = Scatter {
            init: false,
            ..Scatter::new(Reduction::Mean, &data, &idx, &upd)
        };
        let want = ty.rounded(&mean.expected());
        let k = kernel(crate::runtime_indices(&indices).unwrap());
        for t in [2, 3] {
            let mut out = data.clone();
            let ran = run_from(ty, &k, Reduction::Sum, &mut out, &upd, t);
            assert!(matches!(ran, Some(Ok(()))), "{ty:?} run_from on {t}");
            assert_same_bits(&ty.rounded(&out), &want, format!("{ty:?} run_from on {t}"));
            let inputs = vec![
                ty.tensor(&[along], &data),
                crate::testing::i64s(&[n], &idx),
                ty.tensor(&[n], &upd),
                crate::testing::i64s(&[], &[0]),
            ];
            let op = super::seu12(Reduction::Mean, false);
            let out = crate::testing::eval_with(&op, inputs, t).unwrap();
            assert_same_bits(&ty.values(&out), &want, format!("{ty:?} mean on {t}"));
        }
    }
}
