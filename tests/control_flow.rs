//! Loop, TensorIterator and If at run time, on models/ops/control_flow (whose golden case, from
//! OpenVINO CPU, is in tests/model_goldens.rs) with other inputs: the number of iterations set
//! by the trip count, the execution condition and the body's condition; no iteration at all;
//! an iteration past the slices. Expected values are worked out here from the model's
//! definition in tools/gen_model_goldens.py (`control_flow`), not taken from irun.

use irun::{Model, Options, Tensor};
use irun_tensor::read_npz;

use crate::goldens;

const CASE: &str = "models/ops/control_flow";

fn inputs_with(changes: &[(&str, Tensor)]) -> Vec<(String, Tensor)> {
    let mut inputs = read_npz(std::fs::File::open(format!("{CASE}/inputs.npz")).unwrap()).unwrap();
    for (name, value) in changes {
        let slot = inputs.iter_mut().find(|(k, _)| k == name).unwrap();
        slot.1 = value.clone();
    }
    inputs
}

fn run(changes: &[(&str, Tensor)]) -> Result<Vec<(String, Tensor)>, irun::RunError> {
    let exe = Model::open(format!("{CASE}/model.xml"))
        .unwrap()
        .compile(&Options::new().threads(2))
        .unwrap();
    exe.run(inputs_with(changes))
}

fn f32s<'a>(outputs: &'a [(String, Tensor)], key: &str) -> (&'a [usize], &'a [f32]) {
    let t = &outputs.iter().find(|(k, _)| k == key).unwrap().1;
    (t.shape(), t.values::<f32>().unwrap())
}

fn input(name: &str) -> Vec<f32> {
    let inputs = inputs_with(&[]);
    let t = &inputs.iter().find(|(k, _)| k == name).unwrap().1;
    t.values::<f32>().unwrap().to_vec()
}

fn trip(n: i64) -> (&'static str, Tensor) {
    ("trip", Tensor::from_i64(vec![], vec![n]).unwrap())
}

fn flag(name: &'static str, v: bool) -> (&'static str, Tensor) {
    (name, Tensor::from_bool(vec![], vec![v]).unwrap())
}

/// The Loop's accumulator after `n` iterations: iteration i adds x[i] * scale when i is
/// odd, x[i] - scale when even.
fn accumulated(n: usize) -> Vec<Vec<f32>> {
    let (x, scale, mut acc) = (input("x"), input("scale"), input("acc0"));
    let mut each = Vec::new();
    for i in 0..n {
        for c in 0..3 {
            let xi = x[i * 3 + c];
            acc[c] += if i % 2 == 1 {
                xi * scale[c]
            } else {
                xi - scale[c]
            };
        }
        each.push(acc.clone());
    }
    each
}

#[test]
fn the_trip_count_or_the_body_condition_ends_the_loop() {
    // The body's condition is false after iteration 3: trip counts of 6 and -1 give 4
    // iterations, a trip count of 2 gives 2.
    for (t, n) in [(6, 4), (-1, 4), (2, 2), (1, 1)] {
        let out = run(&[trip(t)]).unwrap();
        let each = accumulated(n);
        let (shape, values) = f32s(&out, "loop_each");
        assert_eq!(shape, [n, 1, 3], "trip {t}");
        assert_eq!(values, each.concat(), "trip {t}");
        let (shape, values) = f32s(&out, "loop_last");
        assert_eq!((shape, values), (&[1, 3][..], &each[n - 1][..]), "trip {t}");
    }
}

#[test]
fn no_iteration_leaves_the_initial_value_and_joins_nothing() {
    for changes in [vec![trip(0)], vec![flag("go", false)]] {
        let out = run(&changes).unwrap();
        assert_eq!(f32s(&out, "loop_last").1, input("acc0"));
        assert_eq!(f32s(&out, "loop_each").0, [0, 1, 3]);
    }
}

#[test]
fn if_runs_the_branch_its_condition_picks() {
    let (x, scale) = (input("x"), input("scale"));
    // yes/no swapped: if_yes now takes the else branch (-scale), if_no the then branch.
    let out = run(&[flag("yes", false), flag("no", true)]).unwrap();
    let negated: Vec<f32> = scale.iter().map(|v| -v).collect();
    assert_eq!(f32s(&out, "if_yes"), (&[1, 3][..], &negated[..]));
    let summed: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(k, v)| v + scale[k % 3])
        .collect();
    assert_eq!(f32s(&out, "if_no"), (&[6, 3][..], &summed[..]));
}

#[test]
fn the_tensor_iterator_reads_its_sequence_backwards() {
    // h = 10 h + x[t] over t = 3, 2, 1, 0; joined forwards and in reverse.
    let out = run(&[]).unwrap();
    let seq = input("seq");
    let mut h = [0f32; 4];
    let mut steps = Vec::new();
    for t in (0..4).rev() {
        for k in 0..4 {
            h[k] = 10.0 * h[k] + seq[t * 4 + k];
        }
        steps.push(h.to_vec());
    }
    assert_eq!(f32s(&out, "ti_last").1, &h[..]);
    assert_eq!(f32s(&out, "ti_fwd").1, steps.concat());
    steps.reverse();
    assert_eq!(f32s(&out, "ti_back").1, steps.concat());
}

#[test]
fn an_iteration_past_the_slices_is_an_error() {
    // Only 6 slices of x: with the body's condition made always true by running to the
    // trip count, iteration 6 has no slice. The condition stops at 4 here, so use a shorter x.
    let short = Tensor::from_f32(vec![3, 3], vec![0.5; 9]).unwrap();
    let err = run(&[trip(5), ("x", short)]).unwrap_err();
    assert!(
        err.message
            .contains("iteration 3 reads slice 3 of input 2, which has 3 along axis 0"),
        "{}",
        err.message
    );
}

/// The loop-invariant parts of models/ops/loop_invariant's TensorIterator (sliced backwards
/// along axis 1) and Loop (constant-true condition) run for every iteration at once before
/// their loops; its batch-1 TensorIterator (a vector product per iteration) is left as it
/// is; so are bodies with no product or a condition that may end the loop early. Whatever
/// the trip count (none, one, fewer than the slices, all of them) and the
/// number of threads, the outputs are those of every op run as written, bit for bit; a trip
/// count past the slices is the same error.
#[test]
fn loop_invariant_parts_run_first_and_change_no_bit() {
    let case = "models/ops/loop_invariant";
    let mut inputs = read_npz(std::fs::File::open(format!("{case}/inputs.npz")).unwrap()).unwrap();
    let compile = |threads, prepare_constants| {
        goldens::compile_internal(
            std::path::Path::new(&format!("{case}/model.xml")),
            &irun_exec::Options::new()
                .threads(threads)
                .prepare_constants(prepare_constants),
        )
    };
    let plain = compile(1, false);
    assert_eq!(plain.hoisted_loops(), 0);
    // models/ops/control_flow's Loop may stop on its body's condition, and its
    // TensorIterator's body has no product.
    let other = goldens::compile_internal(
        std::path::Path::new(&format!("{CASE}/model.xml")),
        &irun_exec::Options::new(),
    );
    assert_eq!(other.hoisted_loops(), 0);
    for threads in [1, 2, 3] {
        let hoisted = compile(threads, true);
        assert_eq!(hoisted.hoisted_loops(), 2);
        for trip in [0, 1, 2, 5, 6, 7] {
            let slot = inputs.iter_mut().find(|(k, _)| k == "trip").unwrap();
            slot.1 = Tensor::from_i64(vec![], vec![trip]).unwrap();
            let (want, got) = (plain.run(inputs.clone()), hoisted.run(inputs.clone()));
            match (want, got) {
                (Ok(want), Ok(got)) => assert!(
                    goldens::same_bits(&got, &want),
                    "trip {trip}, {threads} threads: the hoisted parts changed bits"
                ),
                (Err(want), Err(got)) => {
                    assert_eq!(trip, 7);
                    assert_eq!(want.message, got.message);
                    assert!(
                        got.message.contains("iteration 6 reads slice 6"),
                        "{}",
                        got.message
                    );
                }
                (want, got) => panic!("trip {trip}: {want:?} but {got:?}"),
            }
        }
    }
}
