//! The scatter golden suite (models/scatter, written by tools/gen_scatter_goldens.py from an
//! independent numpy reference of the scatter semantics in the README, cross-checked with OpenVINO CPU).
//!
//! Every case runs through the public API at 1 and 2 threads: outputs must be bit-identical
//! between the two, and equal to expected.npz bit for bit (NaN matches NaN), float sums and
//! means included. Must-fail cases must fail with the stated code and message.
//! A second test runs every case through the `irun run` binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use irun_exec::Options;
use irun_tensor::{read_npz, Storage, Tensor};

#[path = "../../../tests/goldens/mod.rs"]
mod goldens;

/// Every case models/scatter/manifest.json lists (a missing file fails).
fn cases() -> Vec<PathBuf> {
    goldens::golden_dirs("scatter", &["case.json", "model.xml"])
}

struct Case {
    dir: PathBuf,
    meta: serde_json::Value,
}

impl Case {
    fn load(dir: &Path) -> Case {
        let meta =
            serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
        Case {
            dir: dir.to_path_buf(),
            meta,
        }
    }

    fn name(&self) -> &str {
        self.meta["name"].as_str().unwrap()
    }

    fn op(&self) -> &str {
        self.meta["op"].as_str().unwrap()
    }

    fn expected_error(&self) -> Option<(&str, &str)> {
        let e = self.meta.get("expect_error")?;
        Some((e["code"].as_str().unwrap(), e["message"].as_str().unwrap()))
    }

    fn npz(&self, file: &str) -> Vec<(String, Tensor)> {
        read_npz(std::fs::File::open(self.dir.join(file)).unwrap()).unwrap()
    }
}

/// Bit equality, NaN matching NaN (payloads may differ between numpy and Rust).
fn same_bits(a: &Tensor, b: &Tensor) -> bool {
    fn floats<T: Copy>(a: &[T], b: &[T], bits: impl Fn(T) -> u64, nan: impl Fn(T) -> bool) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(&x, &y)| bits(x) == bits(y) || (nan(x) && nan(y)))
    }
    if a.element_type() != b.element_type() || a.shape() != b.shape() {
        return false;
    }
    match (a.storage(), b.storage()) {
        (Storage::F32(x), Storage::F32(y)) => floats(x, y, |v| v.to_bits() as u64, f32::is_nan),
        (Storage::F64(x), Storage::F64(y)) => floats(x, y, f64::to_bits, f64::is_nan),
        (Storage::F16(x), Storage::F16(y)) => floats(x, y, |v| v.to_bits() as u64, |v| v.is_nan()),
        (Storage::Bf16(x), Storage::Bf16(y)) => {
            floats(x, y, |v| v.to_bits() as u64, |v| v.is_nan())
        }
        (x, y) => x == y,
    }
}

/// Checks `got` against the case's expected.npz, every output bit for bit: the reference
/// applies updates in row-major order as irun does, so even float sums agree exactly (the
/// `tolerance_other_orders` in case.json is what other orders would need, for OpenVINO).
/// `Err` describes the first difference.
fn check_output(case: &Case, got: &[(String, Tensor)]) -> Result<(), String> {
    let expected = case.npz("expected.npz");
    let keys = |v: &[(String, Tensor)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    if keys(got) != keys(&expected) {
        return Err(format!(
            "outputs {:?}, expected {:?}",
            keys(got),
            keys(&expected)
        ));
    }
    for ((key, out), (_, want)) in got.iter().zip(&expected) {
        if !same_bits(out, want) {
            return Err(format!(
                "output {key}: got {}\nwant {}",
                out.preview(24),
                want.preview(24)
            ));
        }
    }
    Ok(())
}

/// The outputs, and how many layers ran a kernel prepared for constant inputs.
fn run_api(
    case: &Case,
    threads: usize,
) -> (Result<Vec<(String, Tensor)>, irun_exec::RunError>, usize) {
    let exe = goldens::compile_internal(
        &case.dir.join("model.xml"),
        &Options::new().threads(threads),
    );
    (exe.run(case.npz("inputs.npz")), exe.prepared().0)
}

#[test]
fn every_golden_case_matches_at_one_and_two_threads() {
    let mut per_op: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut prepared = Vec::new();
    let all = cases();
    for dir in &all {
        let case = Case::load(dir);
        let (one, prepared_one) = run_api(&case, 1);
        let (two, prepared_two) = run_api(&case, 2);
        if prepared_one + prepared_two > 0 {
            prepared.push(case.name().to_string());
        }
        let entry = per_op.entry(case.op().to_string()).or_default();
        match (case.expected_error(), one, two) {
            (Some((code, msg)), Err(e1), Err(e2)) => {
                entry.1 += 1;
                if e1.code != Some(code) || !e1.message.contains(msg) || e1.message != e2.message {
                    failures.push(format!(
                        "{}: error {:?} {}",
                        case.name(),
                        e1.code,
                        e1.message
                    ));
                }
            }
            (None, Ok(o1), Ok(o2)) => {
                entry.0 += 1;
                let identical = o1.len() == o2.len()
                    && o1
                        .iter()
                        .zip(&o2)
                        .all(|(a, b)| a.0 == b.0 && same_bits(&a.1, &b.1));
                if !identical {
                    failures.push(format!("{}: threads 1 and 2 differ", case.name()));
                }
                if let Err(e) = check_output(&case, &o1) {
                    failures.push(format!("{}: {e}", case.name()));
                }
            }
            (_, r1, _) => failures.push(format!(
                "{}: unexpected outcome {:?}",
                case.name(),
                r1.map(|_| "ok")
            )),
        }
    }
    println!("golden cases (ran, must-fail) per op: {per_op:?}");
    println!("ran with constant indices prepared: {prepared:?}");
    // The cases that exist for the prepared path must take it. Out-of-range constants get a
    // prepared kernel too (the plan is made at the first run), which makes no plan and
    // reports the index as the op does: the case still must fail, with OpenVINO's error.
    let want_prepared = [
        "big_seu12_max_axis1_const",
        "big_seu12_mean_const_indices",
        "big_seu12_sum_1d_const",
        "fail_seu12_const_indices",
    ];
    assert_eq!(prepared, want_prepared);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn irun_run_reproduces_every_golden_case() {
    let tmp = std::env::temp_dir().join(format!("irun-goldens-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut failures = Vec::new();
    for dir in cases() {
        let case = Case::load(&dir);
        let out_file = tmp.join(format!("{}.npz", case.name()));
        let out = Command::new(env!("CARGO_BIN_EXE_irun"))
            .arg("run")
            .arg(dir.join("model.xml"))
            .arg("--inputs")
            .arg(dir.join("inputs.npz"))
            .arg("--outputs")
            .arg(&out_file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        match case.expected_error() {
            Some((ecode, msg)) => {
                if code != Some(1) || !stderr.contains(ecode) || !stderr.contains(msg) {
                    failures.push(format!("{}: exit {code:?}, stderr {stderr}", case.name()));
                }
            }
            None => {
                if code != Some(0) {
                    failures.push(format!("{}: exit {code:?}, stderr {stderr}", case.name()));
                    continue;
                }
                let got = read_npz(std::fs::File::open(&out_file).unwrap()).unwrap();
                if let Err(e) = check_output(&case, &got) {
                    failures.push(format!("{}: {e}", case.name()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Preparations are an optimisation: under a memory limit they would take more than half of,
/// or with `prepare_constants` off, the model runs unprepared, with the same outputs.
#[test]
fn preparation_yields_to_the_memory_limit_and_the_option() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("models/scatter/big_seu12_sum_1d_const");
    let case = Case::load(&dir);
    // The plan holds 2^18 offsets and updates (2 MiB); the run needs about 2.5 MiB.
    for (memory_limit, prepare_constants, prepared) in
        [(None, true, 1), (Some(3 << 20), true, 0), (None, false, 0)]
    {
        let mut options = Options::new()
            .threads(2)
            .prepare_constants(prepare_constants);
        options.memory_limit = memory_limit;
        let exe = goldens::compile_internal(&dir.join("model.xml"), &options);
        assert_eq!(
            exe.prepared().0,
            prepared,
            "{memory_limit:?} {prepare_constants}"
        );
        let out = exe.run(case.npz("inputs.npz")).unwrap();
        check_output(&case, &out).unwrap();
    }
}
