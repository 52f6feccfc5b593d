//! `irun run` and `irun bench` as a user meets them: good runs, and every kind of bad input
//! giving a clear message and exit code 1 (mismatch, run error) or 2 (unreadable), never a panic.

mod common;

use common::{irun, scratch_dir, Outcome};
use std::path::Path;

use irun_tensor::{read_npz, write_npy, write_npz, Tensor};

/// The repository root: the models are there, and the binary runs there.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const CASE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/scatter/seu12_mean_floor_negative"
);

fn npz(dir: &Path, entries: Vec<(&str, Tensor)>) -> String {
    let p = dir.join("in.npz");
    let entries: Vec<(String, Tensor)> = entries
        .into_iter()
        .map(|(k, t)| (k.to_string(), t))
        .collect();
    write_npz(&entries, std::fs::File::create(&p).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

fn good_inputs() -> Vec<(&'static str, Tensor)> {
    vec![
        (
            "data",
            Tensor::from_i32(vec![4], vec![0, 0, 0, 10]).unwrap(),
        ),
        (
            "indices",
            Tensor::from_i64(vec![7], vec![0, 0, 1, 1, 2, 2, 2]).unwrap(),
        ),
        (
            "updates",
            Tensor::from_i32(vec![7], vec![-1, -2, 1, 2, -5, -5, -6]).unwrap(),
        ),
    ]
}

#[track_caller]
fn expect(o: &Outcome, code: i32, needle: &str) {
    assert_eq!(o.code, code, "stderr: {}", o.stderr);
    assert!(
        o.stderr.contains(needle),
        "stderr lacks {needle:?}: {}",
        o.stderr
    );
}

#[test]
fn the_readme_command_prints_the_output() {
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let o = irun(&["run", &model, "--inputs", &inputs]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("out: i32 [4] = ["), "{}", o.stdout);
}

#[test]
fn outputs_file_and_single_npy_inputs() {
    let d = scratch_dir("run-cli");
    let mut inputs = good_inputs();
    let (_, updates) = inputs.pop().unwrap();
    let upd = d.join("updates.npy");
    write_npy(&updates, std::fs::File::create(&upd).unwrap()).unwrap();
    let f = npz(&d, inputs);
    let out = d.join("out.npz");
    let o = irun(&[
        "run",
        &format!("{CASE}/model.xml"),
        "--inputs",
        &f,
        "-i",
        &format!("updates={}", upd.display()),
        "--outputs",
        out.to_str().unwrap(),
        "--threads",
        "1",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let got = read_npz(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(got[0].0, "out");
    assert_eq!(got[0].1.values::<i32>().unwrap(), &[-2, 1, -6, 10]);
}

#[test]
fn input_mismatches_are_exit_1_with_the_reason() {
    let d = scratch_dir("run-cli");
    let model = format!("{CASE}/model.xml");
    let run = |entries: Vec<(&str, Tensor)>| irun(&["run", &model, "--inputs", &npz(&d, entries)]);

    let mut missing = good_inputs();
    missing.remove(0);
    expect(&run(missing), 1, "missing model input(s): `data`");

    let mut unknown = good_inputs();
    unknown.push(("bogus", Tensor::from_i32(vec![1], vec![0]).unwrap()));
    expect(
        &run(unknown),
        1,
        "input `bogus` is not an input of the model",
    );

    let mut wrong_type = good_inputs();
    wrong_type[0] = ("data", Tensor::from_f32(vec![4], vec![0.0; 4]).unwrap());
    expect(
        &run(wrong_type),
        1,
        "input `data` has element type f32, the model expects i32",
    );

    let mut wrong_shape = good_inputs();
    wrong_shape[0] = ("data", Tensor::from_i32(vec![5], vec![0; 5]).unwrap());
    expect(
        &run(wrong_shape),
        1,
        "input `data` has shape [5], the model expects [4]",
    );
}

#[test]
fn an_out_of_range_index_is_exit_1_naming_layer_input_position_and_value() {
    let d = scratch_dir("run-cli");
    let mut inputs = good_inputs();
    inputs[1] = (
        "indices",
        Tensor::from_i64(vec![7], vec![0, 0, 1, 1, 2, 9, 2]).unwrap(),
    );
    let o = irun(&[
        "run",
        &format!("{CASE}/model.xml"),
        "--inputs",
        &npz(&d, inputs),
    ]);
    expect(&o, 1, "[E0601]");
    expect(&o, 1, "ScatterElementsUpdate-12): index 9 at position [5] of input 1 (indices) is out of range [-4, 3] for axis 0 of size 4");
}

#[test]
fn unreadable_inputs_are_exit_2() {
    let d = scratch_dir("run-cli");
    let model = format!("{CASE}/model.xml");
    let o = irun(&["run", &model, "--inputs", "/nonexistent/in.npz"]);
    expect(&o, 2, "cannot open inputs file");
    let junk = d.join("junk.npz");
    std::fs::write(&junk, b"not a zip").unwrap();
    let o = irun(&["run", &model, "--inputs", junk.to_str().unwrap()]);
    expect(&o, 2, "not a valid .npz archive");
    let o = irun(&["run", &model, "-i", "data"]);
    expect(&o, 2, "-i expects NAME=FILE.npy");
}

/// `bytes` with the first occurrence of `from` replaced by `to`.
fn patched(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
    [&bytes[..at], to, &bytes[at + from.len()..]].concat()
}

/// The npz contract: an archive that is not exactly what numpy writes is unreadable (exit 2)
/// with the reason, and an array that does not fit its input is refused from its header
/// (exit 1, the run's own message) before its data is read.
#[test]
fn inputs_files_must_be_sound_npz_archives() {
    let d = scratch_dir("npz-contract");
    let model = format!("{CASE}/model.xml");
    let good = std::fs::read(npz(&d, good_inputs())).unwrap();
    let run_with = |name: &str, bytes: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        irun(&["run", &model, "--inputs", p.to_str().unwrap()])
    };
    // A flipped data byte: data's 10 becomes 11.
    let flipped = patched(
        &good,
        &[0, 0, 0, 0, 10, 0, 0, 0],
        &[0, 0, 0, 0, 11, 0, 0, 0],
    );
    let o = run_with("flipped.npz", &flipped);
    expect(
        &o,
        2,
        "entry 'data.npy': cannot read the data: Invalid checksum",
    );
    // fortran_order must be a boolean.
    let yes = patched(&good, b"'fortran_order': False", b"'fortran_order': 'yes'");
    let o = run_with("yes.npz", &yes);
    expect(&o, 2, "fortran_order is 'yes', not True or False");
    // The same member twice: `indices.npy` renamed `updates.npy` (same length) in its local
    // header and in the central directory.
    let mut twice = good.clone();
    let spots: Vec<usize> = (0..twice.len() - 11)
        .filter(|&i| &twice[i..i + 11] == b"indices.npy")
        .collect();
    assert_eq!(spots.len(), 2);
    for i in spots {
        twice[i..i + 11].copy_from_slice(b"updates.npy");
    }
    let o = run_with("twice.npz", &twice);
    expect(&o, 2, "two entries named 'updates.npy'");
    // Bytes after an array's data in its member.
    let mut doc = Vec::new();
    write_npy(
        &Tensor::from_i32(vec![4], vec![0, 0, 0, 10]).unwrap(),
        &mut doc,
    )
    .unwrap();
    doc.extend_from_slice(b"extra");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("data.npy", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut zip, &doc).unwrap();
    let trailing = zip.finish().unwrap().into_inner();
    let o = run_with("trailing.npz", &trailing);
    expect(&o, 2, "entry 'data.npy': bytes after the array's data");
    // A header that does not fit the input: refused before its 4 GB are read.
    let mut header = Vec::new();
    write_npy(&Tensor::from_i32(vec![4], vec![0; 4]).unwrap(), &mut header).unwrap();
    let huge = patched(&header[..header.len() - 16], b"(4,)", b"(1000000000,)");
    let single = d.join("huge.npy");
    std::fs::write(&single, &huge).unwrap();
    let spec = format!("data={}", single.display());
    let o = irun(&[
        "run",
        &model,
        "--inputs",
        &npz(&d, good_inputs()),
        "-i",
        &spec,
    ]);
    expect(
        &o,
        1,
        "input `data` has shape [1000000000], the model expects [4]",
    );
    let wide = npz(
        &d,
        vec![("data", Tensor::from_i64(vec![4], vec![0; 4]).unwrap())],
    );
    let o = irun(&["run", &model, "--inputs", &wide]);
    expect(
        &o,
        1,
        "input `data` has element type i64, the model expects i32",
    );
}

#[test]
fn a_memory_limit_is_a_clean_error() {
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let o = irun(&["run", &model, "--inputs", &inputs, "--memory-limit", "64"]);
    expect(&o, 1, "over the memory limit of 64 bytes");
}

#[test]
fn tensors_and_decoded_constants_count_against_the_memory_limit() {
    // The inputs (100 bytes) and the Const fit in 110 bytes; the op's output does not.
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let o = irun(&["run", &model, "--inputs", &inputs, "--memory-limit", "110"]);
    expect(&o, 1, "over the memory limit of 110 bytes");

    // A u1 constant of 80,000 elements is 10,000 bytes in the .bin and 80,000 decoded.
    use irun_graph::testing::{edge, ir, layer, port, result};
    let d = scratch_dir("run_cli");
    let xml = ir(
        &[
            layer(
                0,
                "bits",
                "Const",
                "opset1",
                Some("element_type=\"u1\" shape=\"80000\" offset=\"0\" size=\"10000\""),
                &[],
                &[port(0, "U1", &[80000])],
            ),
            result(1, "out", "U1", &[80000]),
        ],
        &[edge(0, 0, 1, 0)],
    );
    std::fs::write(d.join("model.xml"), xml).unwrap();
    std::fs::write(d.join("model.bin"), vec![0xA5u8; 10_000]).unwrap();
    let model = d.join("model.xml");
    let model = model.to_str().unwrap();
    let o = irun(&["run", model, "--memory-limit", "50000"]);
    expect(
        &o,
        1,
        "needs 80000 bytes, more than the memory limit of 50000 bytes leaves",
    );
    assert!(
        o.stderr.contains("E0604") || o.stderr.contains("[E06"),
        "{}",
        o.stderr
    );
    let out = d.join("out.npz");
    let o = irun(&[
        "run",
        model,
        "--memory-limit",
        "200000",
        "--outputs",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let got = read_npz(std::fs::File::open(&out).unwrap()).unwrap();
    let bits = got[0].1.values::<u8>().unwrap();
    assert_eq!(bits.len(), 80000);
    // 0xA5 = 1010_0101, most significant bit first.
    assert_eq!(&bits[..8], &[1, 0, 1, 0, 0, 1, 0, 1]);
}

/// An output whose shape is computed at run time (Broadcast to a shape the model gets as an
/// input) is checked against the memory limit on its actual shape before its kernel
/// allocates it: 128 MiB refused under a 1 MB limit, 60 bytes allowed.
#[test]
fn outputs_of_shapes_computed_at_run_time_count_against_the_memory_limit() {
    use irun_graph::testing::{edge, ir, layer, parameter, port, result};
    let d = scratch_dir("run_cli_runtime_shape");
    let xml = ir(
        &[
            parameter(0, "shape", "i64", "2", "I64", &[2]),
            layer(
                1,
                "value",
                "Const",
                "opset1",
                Some("element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\""),
                &[],
                &[port(0, "FP32", &[])],
            ),
            layer(
                2,
                "spread",
                "Broadcast",
                "opset3",
                Some("mode=\"numpy\""),
                &[port(0, "FP32", &[]), port(1, "I64", &[2])],
                &[port(2, "FP32", &[-1, -1])],
            ),
            result(3, "out", "FP32", &[-1, -1]),
        ],
        &[edge(1, 0, 2, 0), edge(0, 0, 2, 1), edge(2, 2, 3, 0)],
    );
    std::fs::write(d.join("model.xml"), xml).unwrap();
    std::fs::write(d.join("model.bin"), 1.5f32.to_le_bytes()).unwrap();
    let model = d.join("model.xml");
    let model = model.to_str().unwrap();
    let shape = |dims: Vec<i64>| {
        npz(
            &d,
            vec![("shape", Tensor::from_i64(vec![2], dims).unwrap())],
        )
    };
    let limit = ["--memory-limit", "1000000"];
    let o = irun(
        &[
            &["run", model, "--inputs", &shape(vec![4096, 8192])],
            &limit[..],
        ]
        .concat(),
    );
    expect(&o, 1, "its outputs need 134217728 bytes");
    assert!(o.stderr.contains("spread"), "{}", o.stderr);
    let out = d.join("out.npz");
    let small = shape(vec![3, 5]);
    let args = [
        "run",
        model,
        "--inputs",
        &small,
        "--outputs",
        out.to_str().unwrap(),
    ];
    let o = irun(&[&args[..], &limit[..]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let got = read_npz(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(got[0].1.shape(), &[3, 5]);
    assert!(got[0].1.values::<f32>().unwrap().iter().all(|&v| v == 1.5));
}

#[test]
fn bench_prints_the_benchmark_app_block() {
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let o = irun(&[
        "bench",
        &model,
        "--inputs",
        &inputs,
        "-niter",
        "7",
        "--threads",
        "2",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let labels = [
        "[ INFO ] Load model took ",
        "[ INFO ] First inference took ",
        "[ INFO ] Count:            7 iterations",
        "[ INFO ] Duration:         ",
        "[ INFO ] Latency:",
        "[ INFO ]    Median:        ",
        "[ INFO ]    Average:       ",
        "[ INFO ]    Min:           ",
        "[ INFO ]    Max:           ",
        "[ INFO ] Throughput:       ",
    ];
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), labels.len(), "{}", o.stdout);
    for (line, label) in lines.iter().zip(labels) {
        assert!(
            line.starts_with(label),
            "{line:?} should start with {label:?}"
        );
    }
    // Random inputs for this model hit the index check (values in [0, 10) on an axis of 4):
    // a clear run error, not a crash.
    let o = irun(&["bench", &model, "-niter", "1"]);
    expect(&o, 1, "error: [E0601] layer");
    expect(&o, 1, "out of range");
}

/// `--json`: one object with the same timings, unrounded; with `--profile` a usage error.
#[test]
fn bench_json_prints_the_timings_unrounded() {
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let o = irun(&[
        "bench", &model, "--inputs", &inputs, "-niter", "5", "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.lines().count(), 1, "{}", o.stdout);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["count"], 5);
    let ms = |k: &str| {
        v[k].as_f64()
            .unwrap_or_else(|| panic!("{k} is not a number: {v}"))
    };
    for k in [
        "load_ms",
        "first_inference_ms",
        "duration_ms",
        "throughput_fps",
    ] {
        assert!(ms(k) > 0.0, "{k}: {v}");
    }
    assert!(
        ms("min_ms") <= ms("median_ms") && ms("median_ms") <= ms("max_ms"),
        "{v}"
    );
    assert!(
        ms("min_ms") <= ms("average_ms") && ms("average_ms") <= ms("max_ms"),
        "{v}"
    );
    assert!(ms("duration_ms") >= 5.0 * ms("min_ms"), "{v}");
    let o = irun(&["bench", &model, "--inputs", &inputs, "--json", "--profile"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

#[test]
fn bench_writes_the_outputs_after_its_runs() {
    // What the model gives after many runs, whatever its ops kept from run to run: the
    // golden output, as `run --outputs` writes it.
    let dir = scratch_dir("bench_outputs");
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    let out = dir.join("out.npz");
    // `bench` with `--outputs path`, on the golden inputs or (`None`) random ones, which
    // this model's index check rejects.
    let bench = |inputs: Option<&str>, path: &Path| {
        let mut args = vec!["bench", &model, "-niter", "5"];
        args.extend(inputs.map(|i| ["--inputs", i]).into_iter().flatten());
        args.extend(["--outputs", path.to_str().unwrap()]);
        irun(&args)
    };
    let o = bench(Some(&inputs), &out);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("Count:            5 iterations"),
        "{}",
        o.stdout
    );
    let got = read_npz(std::fs::File::open(&out).unwrap()).unwrap();
    let want = read_npz(std::fs::File::open(format!("{CASE}/expected.npz")).unwrap()).unwrap();
    assert_eq!(got, want);
    // A path that cannot be written fails before the benchmark, not after it.
    let o = bench(Some(&inputs), &dir.join("no/such/dir/out.npz"));
    expect(&o, 2, "cannot create");
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    expect(&bench(Some(&inputs), &dir), 2, "a directory, not a file");
    // A run that fails leaves the file that was there as it was, and nothing else behind.
    let before = std::fs::read(&out).unwrap();
    expect(&bench(None, &out), 1, "out of range");
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["out.npz"]);
}

#[test]
fn bench_profile_says_where_the_time_went() {
    // benchmark_app's `-pc` and irun's `--profile`: per layer type, then the slowest layers,
    // each with its name, type and line in the .xml.
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    for flag in ["-pc", "--profile"] {
        let o = irun(&["bench", &model, "--inputs", &inputs, "-niter", "3", flag]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let after = o
            .stdout
            .split("[ INFO ] Time by layer type, per inference (mean of 3 profiled):\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no profile in {}", o.stdout));
        let (types, layers) = after
            .split_once("[ INFO ] Slowest layers, per inference:\n")
            .expect("the slowest layers follow");
        assert!(
            types.contains("ScatterElementsUpdate-12 ") && types.contains(" layer(s) "),
            "{types}"
        );
        assert!(
            layers
                .lines()
                .any(|l| l.contains("(ScatterElementsUpdate, line ")),
            "{layers}"
        );
        assert!(
            !types.contains("Parameter") && !types.contains("Result"),
            "{types}"
        );
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // `irun ops | head -1`, `irun run ... | head`: the reader closes the pipe before irun has
    // written everything; irun stops writing and keeps its exit code instead of panicking.
    let model = format!("{CASE}/model.xml");
    let inputs = format!("{CASE}/inputs.npz");
    for args in [
        vec!["ops"],
        vec!["run", &model, "--inputs", &inputs],
        vec!["info", &model],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_irun"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Every tensor of `got` equals the one of `want` with its key: same type and shape, floats
/// within 1e-5 absolute + relative of OpenVINO's, other types exactly.
fn assert_matches(what: &str, got: &[(String, Tensor)], want: &[(String, Tensor)]) {
    assert_eq!(got.len(), want.len(), "{what}: entries");
    for (key, w) in want {
        let (_, g) = got
            .iter()
            .find(|(k, _)| k == key)
            .unwrap_or_else(|| panic!("{what}: no {key}"));
        assert_eq!(
            (g.element_type(), g.shape()),
            (w.element_type(), w.shape()),
            "{what} {key}"
        );
        match (g.values::<f32>(), w.values::<f32>()) {
            (Some(g), Some(w)) => {
                for (i, (a, b)) in g.iter().zip(w).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5 + 1e-5 * b.abs(),
                        "{what} {key}[{i}]: {a} vs OpenVINO's {b}"
                    );
                }
            }
            _ => assert_eq!(g, w, "{what} {key}"),
        }
    }
}

/// A stateful model stepped from the command line: --state-out of one run is --state-in of
/// the next; every step's outputs are OpenVINO's for that step (one infer request stepped),
/// and the state file after the last step holds OpenVINO's final variables.
#[test]
fn state_files_carry_a_kv_cache_from_step_to_step() {
    let dir = scratch_dir("state");
    let m = &format!("{ROOT}/models/stateful/kv_cache");
    let xml = format!("{m}/model.xml");
    let read = |path: &str| read_npz(std::fs::File::open(path).unwrap()).unwrap();
    let step = |k: usize, extra: &[&str]| {
        let inputs = format!("{m}/step{k}_inputs.npz");
        let mut args = vec!["run", xml.as_str(), "--inputs", inputs.as_str()];
        args.extend_from_slice(extra);
        irun(&args)
    };
    let steps = 4;
    let state = |k: usize| dir.join(format!("s{k}.npz")).to_str().unwrap().to_string();
    for k in 0..steps {
        let (state_in, state_out) = (state(k), state(k + 1));
        let out = dir
            .join(format!("out{k}.npz"))
            .to_str()
            .unwrap()
            .to_string();
        let mut extra = vec!["--state-out", state_out.as_str(), "--outputs", out.as_str()];
        if k > 0 {
            extra.extend(["--state-in", state_in.as_str()]);
        }
        let o = step(k, &extra);
        assert_eq!(o.code, 0, "step {k}: {}", o.stderr);
        let want = read(&format!("{m}/step{k}_expected.npz"));
        assert_matches(&format!("step {k}"), &read(&out), &want);
    }
    let last = read(&state(steps));
    let ids: Vec<&str> = last.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(ids, ["steps", "v_cache", "k_cache"]);
    assert_matches("state", &last, &read(&format!("{m}/state_expected.npz")));
    // A state file for another model, or with a value of the wrong shape: exit 2.
    let o = step(
        1,
        &["--state-in", "models/stateful/growing/state_expected.npz"],
    );
    expect(&o, 2, "the model has no variable `history`");
    let bad = npz(
        &dir,
        vec![("steps", Tensor::from_i32(vec![2], vec![1, 2]).unwrap())],
    );
    expect(
        &step(1, &["--state-in", &bad]),
        2,
        "variable `steps` has shape [1]",
    );
}
