//! `eval_broadcast`: the indices before torch's `expand`, one per line, give what `eval` gives
//! on the broadcast indices, or nothing is done.

use std::sync::Arc;

use irun_tensor::Tensor;

use super::*;
use crate::testing::{f32s, i64s};

/// `[lines, 1]` indices broadcast to `[lines, cols]`.
fn broadcast_rows(line_index: &[i64], cols: usize) -> Vec<i64> {
    line_index.iter().flat_map(|&t| vec![t; cols]).collect()
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn values(ts: Vec<Tensor>) -> Vec<Value> {
    ts.into_iter().map(Arc::new).collect()
}

/// Sums, means (without the initial values) and maxima onto 2-D data along axis 0 with the
/// indices given one per line, with duplicates and negative values, equal `eval` on the
/// broadcast indices bit for bit at 1, 2 and 3 threads.
#[test]
fn one_index_per_line_equals_the_broadcast_indices() {
    let (lines, cols, rows) = (3000usize, 12usize, 500usize);
    let line_index: Vec<i64> = (0..lines as i64)
        .map(|i| (i * i * 7919) % 1000 - 500)
        .collect();
    let upd: Vec<f32> = (0..lines * cols)
        .map(|i| ((i * 31) % 17) as f32 * 0.37 - 2.0)
        .collect();
    let data: Vec<f32> = (0..rows * cols).map(|i| (i % 5) as f32 * 0.25).collect();
    let full = broadcast_rows(&line_index, cols);
    for (red, init) in [
        (Reduction::Sum, true),
        (Reduction::Mean, false),
        (Reduction::Max, true),
    ] {
        let op = ScatterElementsUpdate {
            version: 12,
            reduction: red,
            use_init_val: init,
        };
        let inputs = |idx: Tensor| {
            vec![
                f32s(&[rows, cols], &data),
                idx,
                f32s(&[lines, cols], &upd),
                i64s(&[], &[0]),
            ]
        };
        for threads in [1, 2, 3] {
            let pool = pool(threads);
            let want = pool
                .install(|| op.eval(values(inputs(i64s(&[lines, cols], &full)))))
                .unwrap();
            let mut args = values(inputs(i64s(&[lines, 1], &line_index)));
            let got = pool
                .install(|| op.eval_broadcast(&mut args, &[lines, cols]))
                .unwrap();
            let got = got.expect("a row scatter takes one index per line");
            assert!(args.is_empty(), "the inputs were taken");
            assert_eq!(got, want, "{red:?} at {threads} threads");
        }
    }
}

/// Shapes the row path does not serve, or a `to` other than the updates' shape: nothing is
/// done and the inputs are left for the caller to broadcast.
#[test]
fn other_shapes_are_left_to_the_caller() {
    let op = seu12(Reduction::Sum, true);
    let args = |idx_shape: &[usize], cols: usize| {
        let n: usize = idx_shape.iter().product();
        values(vec![
            f32s(&[10, cols], &vec![0.0; 10 * cols]),
            i64s(idx_shape, &vec![1; n]),
            f32s(&[4, cols], &vec![1.0; 4 * cols]),
            i64s(&[], &[0]),
        ])
    };
    for (idx_shape, cols, to) in [
        // Broadcast along the axis too.
        (vec![1, 1], 16, vec![4, 16]),
        // Lines too short for the row path.
        (vec![4, 1], 4, vec![4, 4]),
        // Not what the updates are.
        (vec![4, 1], 16, vec![4, 8]),
        // Already full.
        (vec![4, 16], 16, vec![4, 16]),
    ] {
        let mut inputs = args(&idx_shape, cols);
        let before = inputs.clone();
        assert!(
            op.eval_broadcast(&mut inputs, &to).unwrap().is_none(),
            "{idx_shape:?} to {to:?}"
        );
        assert_eq!(inputs, before);
    }
}

/// An index out of range is the error `eval` reports on the broadcast indices: the same
/// code and message, at the line's first position.
#[test]
fn a_bad_index_is_reported_as_on_the_broadcast_indices() {
    let (lines, cols) = (64usize, 8usize);
    let mut line_index: Vec<i64> = (0..lines as i64).map(|i| i % 10).collect();
    line_index[37] = 10;
    let op = seu12(Reduction::Sum, true);
    let inputs = |idx: Tensor| {
        values(vec![
            f32s(&[10, cols], &vec![0.0; 10 * cols]),
            idx,
            f32s(&[lines, cols], &vec![1.0; lines * cols]),
            i64s(&[], &[0]),
        ])
    };
    let want = op
        .eval(inputs(i64s(
            &[lines, cols],
            &broadcast_rows(&line_index, cols),
        )))
        .unwrap_err();
    let mut args = inputs(i64s(&[lines, 1], &line_index));
    let got = op.eval_broadcast(&mut args, &[lines, cols]).unwrap_err();
    assert_eq!((got.code, &got.message), (want.code, &want.message));
    assert!(got.message.contains("position [37,0]"), "{}", got.message);
}
