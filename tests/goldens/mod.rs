//! The golden manifests: each family of golden cases under `models/` lists its cases in a
//! `manifest.json` beside them, so a test runs exactly those and a lost or unlisted case fails
//! instead of being skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `models/<family>/manifest.json`.
pub fn manifest(family: &str) -> serde_json::Value {
    let path = repo_root()
        .join("models")
        .join(family)
        .join("manifest.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The golden directories the manifest of `family` lists (its `goldens`, a list of names or an
/// object keyed by them), sorted. Asserts that each holds every file in `required`, and that
/// the family's directories are exactly the goldens and the manifest's `reader_samples`.
pub fn golden_dirs(family: &str, required: &[&str]) -> Vec<PathBuf> {
    let root = repo_root().join("models").join(family);
    let m = manifest(family);
    let listed = |key: &str| -> BTreeSet<String> {
        match &m[key] {
            serde_json::Value::Array(v) => v.iter().map(|n| n.as_str().unwrap().into()).collect(),
            serde_json::Value::Object(o) => o.keys().cloned().collect(),
            _ => BTreeSet::new(),
        }
    };
    let goldens = listed("goldens");
    let mut all = goldens.clone();
    all.extend(listed("reader_samples"));
    let on_disk: BTreeSet<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        on_disk, all,
        "models/{family}: the directories differ from manifest.json"
    );
    assert!(!goldens.is_empty(), "models/{family}: no goldens listed");
    goldens
        .iter()
        .map(|name| {
            let dir = root.join(name);
            for file in required {
                assert!(
                    dir.join(file).exists(),
                    "models/{family}/{name}/{file} is missing"
                );
            }
            dir
        })
        .collect()
}

/// Whether two runs' outputs are the same bit for bit: names, element types, shapes and every
/// value's bit pattern (so -0 differs from +0 and NaN payloads count, where `Tensor`'s `==`
/// compares values).
#[allow(dead_code)]
pub fn same_bits(a: &[(String, irun::Tensor)], b: &[(String, irun::Tensor)]) -> bool {
    use irun_tensor::Words;
    let words = |t: &irun::Tensor| -> Option<Vec<u64>> {
        Some(match t.words()? {
            Words::W1(v) => v.iter().map(|&x| x as u64).collect(),
            Words::W2(v) => v.iter().map(|&x| x as u64).collect(),
            Words::W4(v) => v.iter().map(|&x| x as u64).collect(),
            Words::W8(v) => v.to_vec(),
        })
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, ta), (kb, tb))| {
            ka == kb
                && ta.element_type() == tb.element_type()
                && ta.shape() == tb.shape()
                && match (words(ta), words(tb)) {
                    (Some(x), Some(y)) => x == y,
                    _ => ta == tb,
                }
        })
}

/// The repository root: this module serves the root package's tests and, by `#[path]`, those
/// of crates under `crates/`.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    if here.join("models").is_dir() {
        here.to_path_buf()
    } else {
        here.join("../..")
    }
}

/// Reads and compiles a valid model with the executor crate itself, whose counters
/// (`prepared`, `fused`, `folded`) the public `irun::Executable` does not show.
#[allow(dead_code)]
pub fn compile_internal(xml: &Path, options: &irun_exec::Options) -> irun_exec::Executable {
    let graph = irun_graph::load(xml, None).unwrap_or_else(|d| panic!("{}: {d}", xml.display()));
    assert!(
        !graph.has_errors(),
        "{}: the model is invalid",
        xml.display()
    );
    irun_exec::Executable::compile(graph, options)
        .unwrap_or_else(|e| panic!("{}: {e}", xml.display()))
}
