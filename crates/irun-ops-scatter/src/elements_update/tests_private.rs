//! Private folds ([`super::private`]): integer and boolean histograms on small outputs,
//! each thread's chunk of positions folded into its own copy of the output from the
//! combine's identity, the copies folded into the output in chunk order. Checked against
//! the spec's loop, one update at a time, at 1, 2 and 3 threads.

use super::strategy::Tuning;
use super::tests_kit::{on, scattered, wrapping_i32, Scatter, EVERY_REDUCTION};
use super::*;

#[test]
fn integer_folds_match_the_sequential_reference() {
    let n = Tuning::BUCKETED_MIN_INDICES + 4321;
    // About 2.6 updates an element: many elements are reached by one chunk only, so a
    // copy that did not start at the identity would change them.
    let along = 100_003usize;
    let idx = scattered(n, along, Some(10));
    // Updates that overflow sums and products, so that wrapping is exercised too.
    let upd32 = wrapping_i32(n);
    let data32: Vec<i32> = (0..along as i32).map(|i| i * 7 - 5000).collect();
    let upd64: Vec<i64> = upd32.iter().map(|&u| i64::from(u) << 20).collect();
    let data64: Vec<i64> = data32.iter().map(|&d| i64::from(d)).collect();
    // The combines that fold apart on integers: all but `none`.
    for red in EVERY_REDUCTION.into_iter().skip(1) {
        Scatter::new(red, &data32, &idx, &upd32).check("folds", &on(&[1, 2, 3]));
        Scatter::new(red, &data64, &idx, &upd64).check("folds", &on(&[1, 2, 3]));
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
    let idx: Vec<i64> = scattered(n, along / 2, Some(10))
        .iter()
        .map(|&v| v.rem_euclid(half))
        .collect();
    let upd: Vec<bool> = (0..n).map(|i| i % 97 == 0).collect();
    let data: Vec<bool> = (0..along).map(|i| i % 3 == 0).collect();
    for red in [Reduction::Sum, Reduction::Prod] {
        Scatter::new(red, &data, &idx, &upd).check("booleans", &on(&[1, 2, 3]));
    }
}

/// Bad indices in the first, second and third thirds of the positions (so in different
/// chunks at 2 and 3 threads), and the same without the first: the first position's is
/// reported, whichever task ends first (run a few times).
#[test]
fn private_folds_report_the_first_bad_index() {
    let n = Tuning::BUCKETED_MIN_INDICES + 10;
    let along = 2000usize;
    let (data, upd) = (vec![1i64; along], vec![2i64; n]);
    let all = [n / 3 - 7, n / 2 + 11, n - 5];
    for bad in [&all[..], &all[1..]] {
        let mut idx = scattered(n, along, Some(10));
        for (k, &at) in bad.iter().enumerate() {
            idx[at] = (along + k) as i64;
        }
        let case = Scatter::new(Reduction::Sum, &data, &idx, &upd);
        case.check_error(along as i64, bad[0], &on(&[1, 2, 3, 2, 3, 2, 3]));
    }
}

/// Without `use_init_val` an element's first update replaces it, which the copies' identity
/// cannot say: such reductions keep their counted paths, and give the spec's loop's result.
#[test]
fn without_init_values_the_counted_path_runs() {
    let n = Tuning::BUCKETED_MIN_INDICES + 7;
    let along = 1000usize;
    let idx = scattered(n, along / 2, Some(10));
    let upd: Vec<i64> = (0..n as i64).map(|i| i % 13 - 6).collect();
    let data = vec![100i64; along];
    let case = Scatter {
        init: false,
        ..Scatter::new(Reduction::Sum, &data, &idx, &upd)
    };
    case.check("counted", &on(&[1, 2, 3]));
}
