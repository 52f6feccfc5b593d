//! The ONNX backend node suite as OpenVINO's converter writes it (`models/onnx_suite/ir.zip`,
//! written by tools/convert_onnx_suite.py, tools/run_onnx_suite.py and
//! tools/pack_onnx_suite.py):
//! - no false errors on valid IR: every file OpenVINO compiles, and every model bundled in
//!   `models/` outside `models/check` (which holds invalid variants on purpose), reads and
//!   validates without a single error;
//! - every test the manifest marks `irun: pass` still matches the suite's own expected outputs
//!   (ONNX's reference values, not irun's), within the ONNX backend's tolerance.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use irun::{Error, Model, Options};
use irun_tensor::{read_npz, Storage, Tensor};

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/onnx_suite");

#[derive(serde::Deserialize)]
struct Entry {
    /// OpenVINO CPU's `compile_model` accepted the file.
    compiles: bool,
    /// `Some("pass")` when irun matched the suite's outputs when the manifest was written.
    #[serde(default)]
    irun: Option<String>,
}

fn manifest() -> BTreeMap<String, Entry> {
    serde_json::from_str(&std::fs::read_to_string(Path::new(SUITE).join("manifest.json")).unwrap())
        .unwrap()
}

fn archive() -> zip::ZipArchive<std::fs::File> {
    zip::ZipArchive::new(std::fs::File::open(Path::new(SUITE).join("ir.zip")).unwrap()).unwrap()
}

/// Every error `irun check` would print for a model, one line each.
fn errors(result: Result<Model, Error>) -> Vec<String> {
    match result {
        Ok(_) => vec![],
        Err(Error::Invalid(diags)) => diags
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect(),
        Err(e) => vec![e.to_string()],
    }
}

fn read_member(zip: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Option<Vec<u8>> {
    let mut f = zip.by_name(name).ok()?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).unwrap();
    Some(bytes)
}

#[test]
fn every_onnx_suite_file_openvino_compiles_checks_without_errors() {
    let manifest = manifest();
    let mut zip = archive();
    let mut checked = 0;
    let mut false_errors = Vec::new();
    for (name, entry) in &manifest {
        // Every listed file is in the archive, so a file lost from it fails here.
        let xml = read_member(&mut zip, &format!("{name}/model.xml"))
            .unwrap_or_else(|| panic!("{name}/model.xml is missing from ir.zip"));
        if !entry.compiles {
            continue;
        }
        let bin = read_member(&mut zip, &format!("{name}/model.bin")).unwrap_or_default();
        checked += 1;
        for e in errors(Model::from_bytes(&xml, bin)) {
            false_errors.push(format!("{name}: {e}"));
        }
    }
    let compiled = manifest.values().filter(|e| e.compiles).count();
    assert_eq!(checked, compiled);
    assert!(
        compiled > 1000,
        "the manifest lists {compiled} files OpenVINO compiles"
    );
    assert!(
        false_errors.is_empty(),
        "{} error(s) on files OpenVINO compiles:\n{}",
        false_errors.len(),
        false_errors.join("\n")
    );
}

fn model_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            model_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "xml") {
            out.push(path);
        }
    }
}

#[test]
fn every_bundled_model_checks_without_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() && dir.file_name().is_some_and(|n| n != "check") {
            model_files(&dir, &mut files);
        }
    }
    let false_errors: Vec<String> = files
        .iter()
        .flat_map(|f| {
            errors(Model::open(f))
                .into_iter()
                .map(move |e| format!("{}: {e}", f.display()))
        })
        .collect();
    assert!(files.len() > 250, "{} bundled models", files.len());
    assert!(false_errors.is_empty(), "{}", false_errors.join("\n"));
}

fn npz(zip: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Vec<(String, Tensor)> {
    let bytes = read_member(zip, name).unwrap_or_else(|| panic!("{name} is missing"));
    read_npz(std::io::Cursor::new(bytes)).unwrap()
}

/// Values as f64 (bf16 either as irun's bf16 or as the suite's raw u16 bits), `None` for
/// other types, compared exactly.
fn as_f64(t: &Tensor, bf16_bits: bool) -> Option<Vec<f64>> {
    Some(match t.storage() {
        Storage::F32(v) => v.iter().map(|&x| x as f64).collect(),
        Storage::F64(v) => v.to_vec(),
        Storage::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Storage::Bf16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Storage::U16(v) if bf16_bits => v
            .iter()
            .map(|&b| irun_tensor::bf16::from_bits(b).to_f64())
            .collect(),
        _ => return None,
    })
}

/// Why `got` does not match the suite's `want`: the ONNX backend's check, rtol 1e-3 and atol
/// 1e-7, NaN where NaN is expected; other types exactly.
fn mismatch(got: &Tensor, want: &Tensor) -> Option<String> {
    let bf16 = got.element_type() == irun::ElementType::Bf16;
    if got.shape() != want.shape() {
        return Some(format!(
            "shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
    }
    match (as_f64(got, false), as_f64(want, bf16)) {
        (Some(g), Some(w)) => g.iter().zip(&w).enumerate().find_map(|(i, (&a, &b))| {
            let close =
                a == b || (a - b).abs() <= 1e-7 + 1e-3 * b.abs() || (a.is_nan() && b.is_nan());
            (!close).then(|| format!("element {i}: got {a}, expected {b}"))
        }),
        _ => (got.storage() != want.storage())
            .then(|| format!("got {}, expected {}", got.preview(8), want.preview(8))),
    }
}

#[test]
fn every_onnx_suite_test_irun_passed_still_passes() {
    let manifest = manifest();
    let mut zip = archive();
    let mut failures = Vec::new();
    let passing: Vec<&String> = manifest
        .iter()
        .filter(|(_, e)| e.irun.as_deref() == Some("pass"))
        .map(|(n, _)| n)
        .collect();
    for name in &passing {
        let xml = read_member(&mut zip, &format!("{name}/model.xml")).unwrap();
        let bin = read_member(&mut zip, &format!("{name}/model.bin")).unwrap_or_default();
        let inputs = npz(&mut zip, &format!("{name}/inputs.npz"));
        let want = npz(&mut zip, &format!("{name}/expected.npz"));
        let got = Model::from_bytes(&xml, bin)
            .and_then(|m| m.compile(&Options::new().threads(1)))
            .map_err(|e| e.to_string())
            .and_then(|exe| exe.run(inputs).map_err(|e| e.to_string()));
        let got = match got {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if got.len() != want.len() {
            failures.push(format!(
                "{name}: {} outputs, {} expected",
                got.len(),
                want.len()
            ));
            continue;
        }
        for (i, ((_, g), (_, w))) in got.iter().zip(&want).enumerate() {
            if let Some(why) = mismatch(g, w) {
                failures.push(format!("{name} output {i}: {why}"));
            }
        }
    }
    assert!(
        passing.len() > 1000,
        "{} passing tests listed",
        passing.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} tests that passed no longer do:\n{}",
        failures.len(),
        passing.len(),
        failures.join("\n")
    );
}
