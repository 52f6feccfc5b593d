//! Stateful models (ReadValue/Assign): the golden cases of models/stateful, written by
//! tools/gen_stateful_goldens.py from one OpenVINO infer request run step by step, replayed
//! through one `State` at 1 and 2 threads; and what the state promises: a cache updated in
//! place, initial-value subgraphs computed only while a variable is unset, a failed run that
//! never leaves a half-updated variable, and checked values.

use std::path::{Path, PathBuf};

use irun::{Executable, Model, Options, State};
use irun_graph::testing::{edge, ir, layer, parameter, port, result};
use irun_tensor::{read_npz, Storage, Tensor};

fn case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/stateful")
        .join(name)
}

fn npz(path: &Path) -> Vec<(String, Tensor)> {
    read_npz(std::fs::File::open(path).unwrap()).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn compile(dir: &Path, threads: usize) -> Executable {
    Model::open(dir.join("model.xml"))
        .unwrap()
        .compile(&Options::new().threads(threads))
        .unwrap()
}

/// Integers exactly; floats within 1e-5 relative + absolute (OpenVINO's vectorised exp in
/// the softmax differs from libm in the last bits), as f64.
fn assert_close(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.element_type(), want.element_type(), "{what}: type");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let floats = |t: &Tensor| match t.storage() {
        Storage::F32(v) => Some(v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()),
        _ => None,
    };
    match (floats(got), floats(want)) {
        (Some(g), Some(w)) => {
            for (i, (g, w)) in g.iter().zip(&w).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-5 + 1e-5 * w.abs(),
                    "{what}[{i}]: {g} vs OpenVINO's {w}"
                );
            }
        }
        _ => assert_eq!(got, want, "{what}"),
    }
}

fn assert_outputs(what: &str, got: &[(String, Tensor)], want: &[(String, Tensor)]) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    for (key, w) in want {
        let g = got
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("{what}: no output {key}"));
        assert_close(&format!("{what} {key}"), &g.1, w);
    }
}

use crate::goldens;

fn replay(name: &str, threads: usize) {
    let dir = case(name);
    // The step count is written beside the data, so a lost step file fails.
    let steps = goldens::manifest("stateful")["goldens"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("models/stateful/manifest.json lists no {name}"));
    let exe = compile(&dir, threads);
    let mut state = exe.new_state();
    let mut k = 0;
    while dir.join(format!("step{k}_inputs.npz")).exists() {
        let out = exe
            .run_with_state(&mut state, npz(&dir.join(format!("step{k}_inputs.npz"))))
            .unwrap_or_else(|e| panic!("{name} step {k}: {e}"));
        let want = npz(&dir.join(format!("step{k}_expected.npz")));
        assert_outputs(&format!("{name} step {k} ({threads} threads)"), &out, &want);
        k += 1;
    }
    assert_eq!(k as u64, steps, "{name}: steps replayed");
    let want_state = npz(&dir.join("state_expected.npz"));
    assert_eq!(state.values().count(), want_state.len());
    for (id, want) in &want_state {
        let got = state.get(id).unwrap().expect("set after the steps");
        assert_close(&format!("{name} state {id}"), got, want);
    }
    state.reset();
    let out = exe
        .run_with_state(&mut state, npz(&dir.join("reset_inputs.npz")))
        .unwrap();
    assert_outputs(
        &format!("{name} after reset"),
        &out,
        &npz(&dir.join("reset_expected.npz")),
    );
}

#[test]
fn a_kv_cache_steps_as_openvino_s_infer_request() {
    for threads in [1, 2] {
        replay("kv_cache", threads);
    }
}

#[test]
fn a_growing_cache_steps_as_openvino_s_infer_request() {
    for threads in [1, 2] {
        replay("growing", threads);
    }
}

fn data_ptr(state: &State, id: &str) -> *const f32 {
    state
        .get(id)
        .unwrap()
        .unwrap()
        .values::<f32>()
        .unwrap()
        .as_ptr()
}

#[test]
fn the_cache_is_updated_in_place() {
    let dir = case("kv_cache");
    let exe = compile(&dir, 2);
    let mut state = exe.new_state();
    exe.run_with_state(&mut state, npz(&dir.join("step0_inputs.npz")))
        .unwrap();
    let (k, v) = (data_ptr(&state, "k_cache"), data_ptr(&state, "v_cache"));
    // A copy of its own: a clone would share the buffer, and the run would rightly copy.
    let before = state.get("k_cache").unwrap().unwrap().deep_clone();
    for step in 1..4 {
        exe.run_with_state(&mut state, npz(&dir.join(format!("step{step}_inputs.npz"))))
            .unwrap();
        assert_eq!(data_ptr(&state, "k_cache"), k, "step {step}: k_cache moved");
        assert_eq!(data_ptr(&state, "v_cache"), v, "step {step}: v_cache moved");
    }
    assert_ne!(state.get("k_cache").unwrap().unwrap(), &before);
}

#[test]
fn a_failed_run_unsets_what_it_had_taken_over() {
    let dir = case("kv_cache");
    let exe = compile(&dir, 1);
    let mut state = exe.new_state();
    exe.run_with_state(&mut state, npz(&dir.join("step0_inputs.npz")))
        .unwrap();
    let mut bad = npz(&dir.join("step1_inputs.npz"));
    for (k, t) in &mut bad {
        if k == "pos" {
            *t = Tensor::from_i64(vec![2], vec![3, 99]).unwrap();
        }
    }
    let e = exe.run_with_state(&mut state, bad).unwrap_err();
    assert_eq!(e.code, Some("E0601"), "{e}");
    assert!(e.message.contains("`k_cache`"), "{e}");
    assert!(e.message.contains("now unset"), "{e}");
    assert!(state.get("k_cache").unwrap().is_none());
    // The run failed before it read the counter: that variable keeps its value.
    let steps = Tensor::from_i32(vec![1], vec![1]).unwrap();
    assert_eq!(state.get("steps").unwrap(), Some(&steps));
    // The caches start over from their initial values, as on the first run.
    let out = exe
        .run_with_state(&mut state, npz(&dir.join("step0_inputs.npz")))
        .unwrap();
    let want = npz(&dir.join("step0_expected.npz"));
    assert_close("after the failure", &out[0].1, &want[0].1);
    assert_eq!(out[1].1, Tensor::from_i32(vec![1], vec![2]).unwrap());
}

/// `acc` starts as `a / b` (integer division) and adds `x` every run.
fn accumulator() -> Executable {
    let i32s = |id: u64| port(id, "I32", &[2]);
    let layers = [
        parameter(0, "a", "i32", "2", "I32", &[2]),
        parameter(1, "b", "i32", "2", "I32", &[2]),
        parameter(2, "x", "i32", "2", "I32", &[2]),
        layer(
            3,
            "init",
            "Divide",
            "opset1",
            None,
            &[i32s(0), i32s(1)],
            &[i32s(2)],
        ),
        layer(
            4,
            "read",
            "ReadValue",
            "opset3",
            Some("variable_id=\"acc\""),
            &[i32s(0)],
            &[i32s(1)],
        ),
        layer(
            5,
            "add",
            "Add",
            "opset1",
            None,
            &[i32s(0), i32s(1)],
            &[i32s(2)],
        ),
        layer(
            6,
            "write",
            "Assign",
            "opset3",
            Some("variable_id=\"acc\""),
            &[i32s(0)],
            &[i32s(1)],
        ),
        result(7, "out", "I32", &[2]),
    ];
    let edges = [
        edge(0, 0, 3, 0),
        edge(1, 0, 3, 1),
        edge(3, 2, 4, 0),
        edge(4, 1, 5, 0),
        edge(2, 0, 5, 1),
        edge(5, 2, 6, 0),
        edge(5, 2, 7, 0),
    ];
    Model::from_bytes(ir(&layers, &edges).as_bytes(), Vec::new())
        .unwrap()
        .compile(&Options::default())
        .unwrap()
}

fn ints(v: [i32; 2]) -> Tensor {
    Tensor::from_i32(vec![2], v.to_vec()).unwrap()
}

fn acc_inputs(b: [i32; 2], x: [i32; 2]) -> Vec<(String, Tensor)> {
    vec![
        ("a".into(), ints([10, 20])),
        ("b".into(), ints(b)),
        ("x".into(), ints(x)),
    ]
}

#[test]
fn the_initial_value_is_computed_only_while_the_variable_is_unset() {
    let exe = accumulator();
    let mut state = exe.new_state();
    let out = exe
        .run_with_state(&mut state, acc_inputs([1, 2], [1, 2]))
        .unwrap();
    assert_eq!(out[0].1, ints([11, 12]));
    // A division by zero in the initial value: it does not run once `acc` holds a value.
    let out = exe
        .run_with_state(&mut state, acc_inputs([0, 0], [1, 1]))
        .unwrap();
    assert_eq!(out[0].1, ints([12, 13]));
    assert_eq!(state.get("acc").unwrap(), Some(&ints([12, 13])));
    // Unset, it does, and fails; a stateless run is a first run.
    state.reset_variable("acc").unwrap();
    let e = exe
        .run_with_state(&mut state, acc_inputs([0, 0], [1, 1]))
        .unwrap_err();
    assert_eq!(e.code, Some("E0606"), "{e}");
    let e = exe.run(acc_inputs([0, 1], [1, 1])).unwrap_err();
    assert_eq!(e.code, Some("E0606"), "{e}");
    assert!(state.get("acc").unwrap().is_none());
}

#[test]
fn state_values_are_checked() {
    let exe = accumulator();
    let mut state = exe.new_state();
    assert_eq!(state.variables().len(), 1);
    assert_eq!(state.variables()[0].id, "acc");
    let e = state.set("acc", Tensor::from_i32(vec![3], vec![0; 3]).unwrap());
    assert!(e.unwrap_err().message.contains("shape"));
    let e = state.set("acc", Tensor::from_f32(vec![2], vec![0.0; 2]).unwrap());
    assert!(e.unwrap_err().message.contains("i32"));
    let e = state.set("nope", ints([0, 0])).unwrap_err();
    assert!(e.message.contains("no variable `nope`"), "{e}");
    state.set("acc", ints([100, 200])).unwrap();
    let out = exe
        .run_with_state(&mut state, acc_inputs([0, 0], [1, 1]))
        .unwrap();
    assert_eq!(out[0].1, ints([101, 201]));
    // A state of another model is refused before anything runs.
    let other = compile(&case("kv_cache"), 1);
    let mut foreign = other.new_state();
    let e = exe
        .run_with_state(&mut foreign, acc_inputs([1, 1], [1, 1]))
        .unwrap_err();
    assert!(e.message.contains("another model"), "{e}");
}

#[test]
fn info_lists_the_variables() {
    let exe = compile(&case("growing"), 1);
    let info = exe.info();
    let vars: Vec<(&str, &str, &str)> = info
        .variables
        .iter()
        .map(|v| (v.id.as_str(), v.element_type.as_str(), v.shape.as_str()))
        .collect();
    assert_eq!(vars, [("history", "f32", "[1,?,4]")]);
    assert!(info
        .render("m.xml")
        .contains("variables:\n  history  f32 [1,?,4]\n"));
    assert_eq!(exe.variables()[0].id, "history");
}

/// The replays above cover exactly the stateful goldens the manifest lists.
#[test]
fn every_stateful_golden_is_replayed() {
    let names: Vec<String> = goldens::golden_dirs("stateful", &["model.xml", "state_expected.npz"])
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["growing", "kv_cache"]);
}
