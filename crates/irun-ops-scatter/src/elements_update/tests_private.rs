//! Private folds ([`super::private`]): integer and boolean histograms on small outputs,
//! each thread's chunk of positions folded into its own copy of the output from the
//! combine's identity, the copies folded into the output in chunk order. Checked against
//! the spec's loop, one update at a time, at 1, 2 and 3 threads.

use irun_tensor::{Scalar, Tensor};

use super::strategy::Tuning;
use super::tests_eval::assert_out_of_range;
use super::*;
use crate::testing::{eval_with, i32s, i64s};

/// Enough positions for the bucketed paths, scattered (not local), onto a small output,
/// with a tenth of the index values negative (counted from the end).
fn scattered(n: usize, along: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| {
            let t = (i * 2_654_435_761) % along as i64;
            if i % 10 == 3 {
                t - along as i64
            } else {
                t
            }
        })
        .collect()
}

/// ScatterElementsUpdate-12 with `use_init_val` on 1-D data, as the spec says: each
/// update in turn, in position order.
fn sequential<T: Copy>(data: &[T], idx: &[i64], upd: &[T], apply: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = data.to_vec();
    let along = data.len() as i64;
    for (&v, &u) in idx.iter().zip(upd) {
        let t = v.rem_euclid(along) as usize;
        out[t] = apply(out[t], u);
    }
    out
}

/// A reduction and the spec's combine for it.
type Case<T> = (Reduction, fn(T, T) -> T);

/// The combines that fold apart on i32: wrapping sum and product, maximum, minimum.
fn i32_cases() -> [Case<i32>; 4] {
    [
        (Reduction::Sum, i32::wrapping_add),
        (Reduction::Prod, i32::wrapping_mul),
        (Reduction::Max, |a, u| a.max(u)),
        (Reduction::Min, |a, u| a.min(u)),
    ]
}

fn scatter(red: Reduction, data: Tensor, idx: &[i64], upd: Tensor, threads: usize) -> Tensor {
    let n = idx.len();
    let inputs = vec![data, i64s(&[n], idx), upd, i64s(&[], &[0])];
    eval_with(&seu12(red, true), inputs, threads).unwrap()
}

#[test]
fn integer_folds_match_the_sequential_reference() {
    let n = Tuning::BUCKETED_MIN_INDICES + 4321;
    // About 2.6 updates an element: many elements are reached by one chunk only, so a
    // copy that did not start at the identity would change them.
    let along = 100_003usize;
    let idx = scattered(n, along);
    // Updates that overflow i32 sums and products, so that wrapping is exercised too.
    let upd32: Vec<i32> = (0..n as i32)
        .map(|i| i.wrapping_mul(1_103_515_245) >> 3)
        .collect();
    let data32: Vec<i32> = (0..along as i32).map(|i| i * 7 - 5000).collect();
    let upd64: Vec<i64> = upd32.iter().map(|&u| i64::from(u) << 20).collect();
    let data64: Vec<i64> = data32.iter().map(|&d| i64::from(d)).collect();
    check_cases(&i32_cases(), &data32, &idx, &upd32, |v| i32s(&[v.len()], v));
    let cases64: [Case<i64>; 4] = [
        (Reduction::Sum, i64::wrapping_add),
        (Reduction::Prod, i64::wrapping_mul),
        (Reduction::Max, |a, u| a.max(u)),
        (Reduction::Min, |a, u| a.min(u)),
    ];
    check_cases(&cases64, &data64, &idx, &upd64, |v| i64s(&[v.len()], v));
}

/// Each case's scatter at 1, 2 and 3 threads equals the spec's loop; `tensor` makes a
/// 1-D tensor of its values.
fn check_cases<T: Scalar + Copy + PartialEq + std::fmt::Debug>(
    cases: &[Case<T>],
    data: &[T],
    idx: &[i64],
    upd: &[T],
    tensor: fn(&[T]) -> Tensor,
) {
    for &(red, apply) in cases {
        let want = sequential(data, idx, upd, apply);
        for threads in [1, 2, 3] {
            let got = scatter(red, tensor(data), idx, tensor(upd), threads);
            assert_eq!(
                got.values::<T>().unwrap(),
                &want[..],
                "{} {red:?} at {threads}",
                std::any::type_name::<T>()
            );
        }
    }
}

/// Boolean sum is or and prod is and: an element no chunk but the first reaches keeps its
/// value through the copies' identities (false for or, true for and).
#[test]
fn boolean_folds_keep_the_identity() {
    let n = Tuning::BUCKETED_MIN_INDICES + 99;
    let along = 5000usize;
    // Targets below `along / 2` only (the negative values taken back into range), so the
    // upper half is reached by no update.
    let half = (along / 2) as i64;
    let idx: Vec<i64> = scattered(n, along / 2)
        .iter()
        .map(|&v| v.rem_euclid(half))
        .collect();
    let upd: Vec<bool> = (0..n).map(|i| i % 97 == 0).collect();
    let data: Vec<bool> = (0..along).map(|i| i % 3 == 0).collect();
    let cases: [Case<bool>; 2] = [
        (Reduction::Sum, |a, u| a | u),
        (Reduction::Prod, |a, u| a & u),
    ];
    check_cases(&cases, &data, &idx, &upd, |v| {
        Tensor::from_bool(vec![v.len()], v.to_vec()).unwrap()
    });
}

/// Bad indices in the first, second and third thirds of the positions (so in different
/// chunks at 2 and 3 threads), and the same without the first: the first position's is
/// reported, whichever task ends first.
#[test]
fn private_folds_report_the_first_bad_index() {
    let n = Tuning::BUCKETED_MIN_INDICES + 10;
    let along = 2000usize;
    let data = vec![1i64; along];
    let upd = vec![2i64; n];
    let all = [n / 3 - 7, n / 2 + 11, n - 5];
    for bad in [&all[..], &all[1..]] {
        let mut idx = scattered(n, along);
        for (k, &at) in bad.iter().enumerate() {
            idx[at] = along as i64 + k as i64;
        }
        for threads in [1, 2, 3] {
            for _ in 0..3 {
                let inputs = vec![
                    i64s(&[along], &data),
                    i64s(&[n], &idx),
                    i64s(&[n], &upd),
                    i64s(&[], &[0]),
                ];
                let e = eval_with(&seu12(Reduction::Sum, true), inputs, threads).unwrap_err();
                assert_out_of_range(&e, along, bad[0], &format!("{threads} threads"));
            }
        }
    }
}

/// Without `use_init_val` an element's first update replaces it, which the copies' identity
/// cannot say: such reductions keep their counted paths, and give the spec's loop's result.
#[test]
fn without_init_values_the_counted_path_runs() {
    let n = Tuning::BUCKETED_MIN_INDICES + 7;
    let along = 1000usize;
    let idx = scattered(n, along / 2);
    let upd: Vec<i64> = (0..n as i64).map(|i| i % 13 - 6).collect();
    let data = vec![100i64; along];
    let mut want = data.clone();
    let mut hit = vec![false; along];
    for (&v, &u) in idx.iter().zip(&upd) {
        let t = v.rem_euclid(along as i64) as usize;
        want[t] = if hit[t] { want[t] + u } else { u };
        hit[t] = true;
    }
    for threads in [1, 2, 3] {
        let inputs = vec![
            i64s(&[along], &data),
            i64s(&[n], &idx),
            i64s(&[n], &upd),
            i64s(&[], &[0]),
        ];
        let got = eval_with(&seu12(Reduction::Sum, false), inputs, threads).unwrap();
        assert_eq!(
            got.values::<i64>().unwrap(),
            &want[..],
            "at {threads} threads"
        );
    }
}
