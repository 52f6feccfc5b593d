//! f16 and bf16 ScatterNDUpdate reductions compute in f32 and round once per element: each
//! case equals the spec's loop run in f32 on the widened values and rounded once, bit for
//! bit, on owned and on shared data (the output then filled as the slices land), at 1-3
//! threads, for rows in any order.

use std::sync::Arc;

use super::*;
use crate::reduce::MaxNd;
use crate::testing::{assert_same_bits, i64s, on_threads, Narrow};

const ROWS: usize = 3000;
const SLICE: usize = 24;

fn nd(reduction: Reduction) -> ScatterNDUpdate {
    ScatterNDUpdate {
        version: 15,
        reduction,
    }
}

/// The spec's loop in f32: each tuple's slice applied to its row, in tuple order.
fn sequential(red: Reduction, data: &[f32], rows: &[i64], upd: &[f32]) -> Vec<f32> {
    let mut out = data.to_vec();
    for (t, &r) in rows.iter().enumerate() {
        for c in 0..SLICE {
            let (o, u) = (r as usize * SLICE + c, upd[t * SLICE + c]);
            out[o] = match red {
                Reduction::Sum => out[o] + u,
                _ => MaxNd::apply(out[o], u),
            };
        }
    }
    out
}

fn check(case: &str, rows: &[i64]) {
    let n = rows.len();
    let data: Vec<f32> = (0..ROWS * SLICE).map(|i| (i % 7) as f32 - 3.0).collect();
    let upd: Vec<f32> = (0..n * SLICE)
        .map(|i| ((i * 37) % 101) as f32 * 0.3 - 12.0)
        .collect();
    for red in [Reduction::Sum, Reduction::Max] {
        for ty in [Narrow::F16, Narrow::Bf16] {
            let (data, upd) = (ty.rounded(&data), ty.rounded(&upd));
            let want = ty.rounded(&sequential(red, &data, rows, &upd));
            let what = format!("{case}: {ty:?} {red:?}");
            for threads in [1, 2, 3] {
                for shared in [false, true] {
                    let held = Arc::new(ty.tensor(&[ROWS, SLICE], &data));
                    let keep = shared.then(|| held.clone());
                    let inputs = vec![
                        held,
                        Arc::new(i64s(&[n, 1], rows)),
                        Arc::new(ty.tensor(&[n, SLICE], &upd)),
                    ];
                    let out = on_threads(threads, || nd(red).eval(inputs)).unwrap();
                    let got = ty.values(&out[0]);
                    let how = format!("{what}, shared={shared}, {threads} threads");
                    assert_same_bits(&got, &want, &how);
                    if let Some(keep) = keep {
                        assert_same_bits(&ty.values(&keep), &data, format!("{how}: the data"));
                    }
                }
            }
        }
    }
}

/// Rows in any order: scattered with duplicates and a hot row; ascending with runs of
/// duplicates, one of them 100 tuples long; descending; all tuples on one row.
#[test]
fn half_slices_match_the_f32_reference_rounded_once() {
    let n = 9000;
    let scattered: Vec<i64> = (0..n as i64)
        .map(|i| {
            if i % 5 == 0 {
                1234
            } else {
                (i * 7919) % ROWS as i64
            }
        })
        .collect();
    check("scattered", &scattered);
    let mut ascending = scattered.clone();
    ascending[4000..4100].fill(2999);
    ascending.sort();
    check("ascending", &ascending);
    let descending: Vec<i64> = ascending.iter().rev().copied().collect();
    check("descending", &descending);
    check("one row", &vec![17; 500]);
}
