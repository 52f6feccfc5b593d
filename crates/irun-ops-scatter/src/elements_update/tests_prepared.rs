use super::*;
use crate::op::Op;
use crate::testing::{eval_prepared, eval_with, f32s, i64s};
use crate::Reduction;
use irun_tensor::{ElementType, Storage, Tensor};

/// Bit patterns, so that NaNs and signed zeros compare exactly.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.storage() {
        Storage::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Storage::F16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Storage::I32(v) => v.iter().map(|&x| x as u32 as u64).collect(),
        other => panic!("no bit view for {other:?}"),
    }
}

/// Indices with duplicates, negative values and every target hit, for an axis of `along`.
fn indices(n: usize, along: usize) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (i * 2_654_435_761) % along as i64 - (along / 2) as i64)
        .collect()
}

/// Data, indices and updates of one layout: (data shape, indices shape, axis).
fn case(dshape: &[usize], ishape: &[usize], axis: usize, ty: ElementType) -> Vec<Tensor> {
    let n: usize = ishape.iter().product();
    let dn: usize = dshape.iter().product();
    let upd: Vec<f32> = (0..n).map(|i| (i % 11) as f32 * 0.75 - 3.0).collect();
    let data: Vec<f32> = (0..dn).map(|i| (i % 5) as f32).collect();
    let typed = |shape: &[usize], v: Vec<f32>| match ty {
        ElementType::F32 => f32s(shape, &v),
        ElementType::I32 => {
            Tensor::from_i32(shape.to_vec(), v.iter().map(|&x| x as i32).collect()).unwrap()
        }
        ElementType::F16 => Tensor::new(
            ElementType::F16,
            shape.to_vec(),
            Storage::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect()),
        )
        .unwrap(),
        _ => unreachable!(),
    };
    vec![
        typed(dshape, data),
        i64s(ishape, &indices(n, dshape[axis])),
        typed(ishape, upd),
        i64s(&[], &[axis as i64]),
    ]
}

/// The prepared kernel against the run-time one (itself tested against sequential loops)
/// on one thread, bit for bit: layouts whose offsets are the targets, are not, and map
/// smaller indices into data; constant updates (stored in plan order) and updates as an
/// input (read through positions); one, two and three threads (one bucket, one per thread,
/// and, with constant updates, as many as the output's size asks).
#[test]
fn prepared_kernel_agrees_with_the_run_time_kernel() {
    let n = Tuning::PLAN_MIN_INDICES + 1001;
    let layouts: [(Vec<usize>, Vec<usize>, usize, ElementType); 4] = [
        (vec![3 << 16], vec![n], 0, ElementType::F32),
        (vec![1 << 12, 3], vec![n / 3, 3], 0, ElementType::I32),
        (vec![40, 5000], vec![40, n / 40], 1, ElementType::F32),
        (vec![70, 9000], vec![50, n / 50], 0, ElementType::F16),
    ];
    for (dshape, ishape, axis, ty) in layouts {
        let inputs = case(&dshape, &ishape, axis, ty);
        for (red, init) in [
            (Reduction::None, true),
            (Reduction::Sum, true),
            (Reduction::Max, false),
            (Reduction::Mean, false),
        ] {
            let op = seu12(red, init);
            let want = eval_with(&op, inputs.clone(), 1).unwrap();
            for constant in [[false, true, true, true], [false, true, false, true]] {
                for threads in [1, 2, 3] {
                    let got = eval_prepared(&op, inputs.clone(), &constant, threads)
                        .expect("prepared")
                        .unwrap();
                    assert!(
                        bits(&got) == bits(&want),
                        "{dshape:?} {ishape:?} axis {axis} {red:?} constant {constant:?} threads {threads}"
                    );
                }
            }
        }
    }
}

/// A run with other values than the constants the plan was made from (as the executor
/// never does, but the contract allows) takes the op's own kernel.
#[test]
fn other_inputs_than_the_prepared_ones_take_the_run_time_kernel() {
    let n = Tuning::PLAN_MIN_INDICES;
    let op = seu12(Reduction::Sum, true);
    let inputs = case(&[1 << 20], &[n], 0, ElementType::F32);
    let values: Vec<Value> = inputs.iter().cloned().map(Arc::new).collect();
    let facts: Vec<_> = values
        .iter()
        .map(|v| crate::Fact::of_static(v.element_type(), v.shape()))
        .collect();
    let constants: Vec<Option<Value>> = values.iter().cloned().map(Some).collect();
    let kernel = op.prepare(&facts, &constants).expect("prepared");
    let mut other = inputs.clone();
    other[2] = f32s(&[n], &vec![2.5; n]);
    other[1] = i64s(&[n], &indices(n, 1000));
    for changed in [1, 2] {
        let mut args = values.clone();
        args[changed] = Arc::new(other[changed].clone());
        let got = kernel.eval(args.clone()).unwrap().remove(0);
        let want = op.eval(args).unwrap().remove(0);
        assert!(bits(&got) == bits(&want), "input {changed} changed");
    }
}

/// No plan for indices out of range: the prepared kernel's run reports them as the op's
/// does, every time, and holds nothing. No preparation at all for few indices or for data
/// of unknown shape.
#[test]
fn prepare_declines() {
    let op = seu12(Reduction::Sum, true);
    let all = [true, true, true, true];
    let mut bad = case(&[1000], &[Tuning::PLAN_MIN_INDICES], 0, ElementType::F32);
    let mut idx = indices(Tuning::PLAN_MIN_INDICES, 1000);
    idx[Tuning::PLAN_MIN_INDICES - 1] = 1000;
    bad[1] = i64s(&[Tuning::PLAN_MIN_INDICES], &idx);
    let values: Vec<Value> = bad.into_iter().map(Arc::new).collect();
    let facts: Vec<_> = values
        .iter()
        .map(|v| crate::Fact::of_static(v.element_type(), v.shape()))
        .collect();
    let constants: Vec<Option<Value>> = values.iter().cloned().map(Some).collect();
    let kernel = op
        .prepare(&facts, &constants)
        .expect("prepared, the plan left to the run");
    assert!(kernel.byte_size() > 0, "counted before the first run");
    let want = op.eval(values.clone()).unwrap_err();
    for _ in 0..2 {
        let got = kernel.eval(values.clone()).unwrap_err();
        assert_eq!((got.code, &got.message), (want.code, &want.message));
    }
    assert_eq!(kernel.byte_size(), 0, "no plan kept");
    let small = case(
        &[1000],
        &[Tuning::PLAN_MIN_INDICES - 1],
        0,
        ElementType::F32,
    );
    assert!(eval_prepared(&op, small, &all, 2).is_none());

    let good = case(&[1000], &[Tuning::PLAN_MIN_INDICES], 0, ElementType::F32);
    let values: Vec<Value> = good.into_iter().map(Arc::new).collect();
    let mut facts: Vec<_> = values
        .iter()
        .map(|v| crate::Fact::of_static(v.element_type(), v.shape()))
        .collect();
    facts[0] = crate::testing::fact(ElementType::F32, "?");
    let constants: Vec<Option<Value>> = values.iter().cloned().map(Some).collect();
    assert!(op.prepare(&facts, &constants).is_none());
}
