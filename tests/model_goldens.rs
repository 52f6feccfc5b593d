//! Whole-model golden cases: every directory under models/ops, models/converted and models/real
//! (real PyTorch models converted by OpenVINO: MobileNetV3-small, a 2-layer BERT, a 2-layer
//! GPT-2 with and without its KV cache, GAT, a PointPillars head, a mixture of experts, an FNO
//! block, a DLRM, label smoothing, a confusion matrix, a dynamic voxel encoder; and from
//! tools/convert_family_models.py a detector with NMS, a U-Net segmenter, a two-stage
//! detector's ROIAlign/GridSample head, a scripted greedy decoder (Loop with an If inside) and
//! a recurrent Scan read as a TensorIterator) with an `expected.npz` (written by
//! tools/gen_model_goldens.py, tools/convert_real_models.py or tools/convert_family_models.py
//! from OpenVINO CPU, f32 precision).
//!
//! Each model runs through the public API at 1 and 2 threads. The two runs must agree bit for
//! bit; every output (not only the first) must carry the expected key, element type and shape,
//! integers and booleans must be equal, floats within 1e-4 relative + 1e-4 absolute (OpenVINO's
//! vectorised exp/erf/tanh differ from libm in the last bits), the absolute part scaled down
//! to the output's largest magnitude when that is below 1, so that an output of zeros fails
//! even where the expected values are tiny.

use std::path::{Path, PathBuf};

use irun::{Model, Options};
use irun_tensor::{read_npz, Storage, Tensor};

use crate::goldens;

/// Every golden model, as the families' manifests list them (a missing file fails).
fn cases() -> Vec<PathBuf> {
    let required = ["model.xml", "inputs.npz", "expected.npz"];
    let mut v: Vec<PathBuf> = ["ops", "converted", "real"]
        .iter()
        .flat_map(|family| goldens::golden_dirs(family, &required))
        .collect();
    v.sort();
    v
}

fn npz(path: &Path) -> Vec<(String, Tensor)> {
    read_npz(std::fs::File::open(path).unwrap()).unwrap()
}

fn run(dir: &Path, threads: usize) -> Vec<(String, Tensor)> {
    let exe = Model::open(dir.join("model.xml"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .compile(&Options::new().threads(threads))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    exe.run(npz(&dir.join("inputs.npz")))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// Floats as f64 for the tolerance check; `None` for other types.
fn as_f64(t: &Tensor) -> Option<Vec<f64>> {
    Some(match t.storage() {
        Storage::F32(v) => v.iter().map(|&x| x as f64).collect(),
        Storage::F64(v) => v.to_vec(),
        Storage::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Storage::Bf16(v) => v.iter().map(|x| x.to_f64()).collect(),
        _ => return None,
    })
}

/// Why `got` does not match `want`, if it does not.
fn mismatch(got: &Tensor, want: &Tensor) -> Option<String> {
    if got.element_type() != want.element_type() || got.shape() != want.shape() {
        return Some(format!(
            "got {} {:?}, expected {} {:?}",
            got.element_type(),
            got.shape(),
            want.element_type(),
            want.shape()
        ));
    }
    match (as_f64(got), as_f64(want)) {
        (Some(g), Some(w)) => {
            // The absolute part of the tolerance is relative to the output's own scale when
            // that is below 1: MobileNetV3's random-initialised logits are of order 1e-9, and
            // a fixed 1e-4 would pass an all-zero output.
            let scale = w
                .iter()
                .filter(|v| v.is_finite())
                .fold(0f64, |m, v| m.max(v.abs()))
                .min(1.0);
            g.iter().zip(&w).enumerate().find_map(|(i, (&a, &b))| {
                let close = (a - b).abs() <= 1e-4 * (scale + b.abs()) || (a.is_nan() && b.is_nan());
                (!close).then(|| format!("element {i}: got {a}, expected {b} (scale {scale:e})"))
            })
        }
        _ => {
            (got != want).then(|| format!("got {}, expected {}", got.preview(12), want.preview(12)))
        }
    }
}

#[test]
fn every_model_matches_openvino_at_1_and_2_threads() {
    let cases = cases();
    let mut failures = Vec::new();
    for dir in &cases {
        let one = run(dir, 1);
        let two = run(dir, 2);
        assert_eq!(
            format!("{one:?}"),
            format!("{two:?}"),
            "{}: 1 vs 2 threads",
            dir.display()
        );
        let want = npz(&dir.join("expected.npz"));
        assert_eq!(
            one.len(),
            want.len(),
            "{}: number of outputs",
            dir.display()
        );
        for ((gk, g), (wk, w)) in one.iter().zip(&want) {
            assert_eq!(gk, wk, "{}: output keys in model order", dir.display());
            if let Some(why) = mismatch(g, w) {
                failures.push(format!("{} output {gk}: {why}", dir.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Compile-time work changes no bit: every model gives the same outputs with its constants
/// prepared (packed filters and weights, planned scatters), the Add/ReLU epilogues fused
/// into the GEMM kernels before them, and the scatters of the GNNs reading their indices
/// before torch's `expand` (the Broadcast and Convert never run), and the detector head's
/// convolution writing its output channel-last for the ROIAlign after it, and the recurrent
/// bodies' input projections run for every iteration at once before their loops, as with
/// every op run as written. Fusion must happen somewhere (MobileNetV3, the PointPillars
/// head, GCN, GraphSAGE, GAT, the ROIAlign head, the scan RNN and the loop-invariant
/// case's TensorIterator and Loop), or this would test nothing.
#[test]
fn prepared_and_fused_kernels_change_no_bit() {
    let (mut fused, mut elided, mut handed_over, mut hoisted) = (0, 0, 0, 0);
    for dir in cases() {
        let compile = |prepare_constants| {
            goldens::compile_internal(
                &dir.join("model.xml"),
                &Options::new()
                    .threads(2)
                    .prepare_constants(prepare_constants)
                    .fuse_broadcasts(prepare_constants),
            )
        };
        let (plain, prepared) = (compile(false), compile(true));
        assert_eq!((plain.fused(), plain.broadcasts_elided()), (0, 0));
        assert_eq!(plain.channels_last_handovers(), 0);
        assert_eq!(plain.hoisted_loops(), 0);
        fused += prepared.fused();
        elided += prepared.broadcasts_elided();
        handed_over += prepared.channels_last_handovers();
        hoisted += prepared.hoisted_loops();
        let inputs = npz(&dir.join("inputs.npz"));
        let want = plain.run(inputs.clone()).unwrap();
        // Twice: a kernel keeps what it worked out at its first run.
        for _ in 0..2 {
            let got = prepared.run(inputs.clone()).unwrap();
            assert!(
                goldens::same_bits(&got, &want),
                "{}: prepared or fused kernels changed bits",
                dir.display()
            );
        }
    }
    assert!(fused >= 10, "only {fused} layers fused");
    assert!(elided >= 4, "only {elided} index broadcasts elided");
    assert!(handed_over >= 1, "no output handed over channel-last");
    assert!(
        hoisted >= 3,
        "only {hoisted} loop bodies ran their loop-invariant part first"
    );
}

/// The ReduceMax over dim -2 after a MatMul (with its bias and ReLU, or alone) is taken over
/// by the prepared product, on static shapes (the kernel's output is checked against the
/// ReduceMax's facts), with the short-k kernel and the packed one, keep_dims or not: the
/// unfused graph's bits (OpenVINO's values are the golden test's).
#[test]
fn a_max_over_rows_is_fused_into_the_product() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/ops/pillar_max");
    let compile = |prepare_constants| {
        goldens::compile_internal(
            &dir.join("model.xml"),
            &Options::new()
                .threads(2)
                .prepare_constants(prepare_constants),
        )
    };
    let (plain, fused) = (compile(false), compile(true));
    // Add, ReLU and ReduceMax after the first product; ReduceMax after the second.
    assert_eq!(fused.fused(), 4);
    let inputs = npz(&dir.join("inputs.npz"));
    let got = fused.run(inputs.clone()).unwrap();
    assert!(goldens::same_bits(&got, &plain.run(inputs).unwrap()));
    assert_eq!(got[1].1.shape(), &[2, 3, 1, 24]);
}

/// A model with dynamic inputs keeps the facts it inferred for the last input shapes: runs on
/// other shapes must not reuse them. GAT on its inputs, on a smaller graph (the first 16 nodes
/// and the edges among them), then on its inputs again: each run equals a run of a fresh
/// executable, and the first equals OpenVINO's output.
#[test]
fn dynamic_shapes_alternate_without_stale_facts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/real/gat");
    let full = npz(&dir.join("inputs.npz"));
    let x = full.iter().find(|(k, _)| k == "x").unwrap().1.clone();
    let edges = full
        .iter()
        .find(|(k, _)| k == "edge_index")
        .unwrap()
        .1
        .clone();
    let (xs, es) = (x.values::<f32>().unwrap(), edges.values::<i64>().unwrap());
    let kept: Vec<usize> = (0..es.len() / 2)
        .filter(|&e| es[e] < 16 && es[es.len() / 2 + e] < 16)
        .collect();
    let mut small_edges: Vec<i64> = kept.iter().map(|&e| es[e]).collect();
    small_edges.extend(kept.iter().map(|&e| es[es.len() / 2 + e]));
    let small = vec![
        (
            "x".to_string(),
            Tensor::from_f32(vec![16, 16], xs[..256].to_vec()).unwrap(),
        ),
        (
            "edge_index".to_string(),
            Tensor::from_i64(vec![2, kept.len()], small_edges).unwrap(),
        ),
    ];
    let compile = || goldens::compile_internal(&dir.join("model.xml"), &Options::new().threads(2));
    let exe = compile();
    let first = exe.run(full.clone()).unwrap();
    let second = exe.run(small.clone()).unwrap();
    let third = exe.run(full).unwrap();
    assert_eq!(second[0].1.shape(), &[16, 32]);
    assert_eq!(second, compile().run(small).unwrap());
    assert_eq!(first, third);
    let want = npz(&dir.join("expected.npz"));
    assert!(mismatch(&first[0].1, &want[0].1).is_none());
}

/// OpenVINO's default f16-compressed weights (`Const f16 -> Convert` before every
/// Convolution and MatMul) are widened once, at compile time, and the kernels that read them
/// are prepared on the widened values, as they are for f32 weights.
#[test]
fn compressed_weights_are_widened_once_and_prepared() {
    let compile = |name: &str| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("models/real")
            .join(name);
        goldens::compile_internal(&dir.join("model.xml"), &Options::new().threads(2))
    };
    let (wide, compressed) = (compile("mobilenet_v3"), compile("mobilenet_v3_f16"));
    assert!(wide.prepared().0 > 40);
    assert_eq!(compressed.prepared().0, wide.prepared().0);
    // Its 54 Converts never run, whatever their size.
    assert!(
        compressed.folded() >= wide.folded() + 54,
        "{} folded",
        compressed.folded()
    );
}

/// The comparison can fail: for every expected output of every golden model, an output of
/// zeros of the same type and shape is rejected (an expected output that is itself all zeros
/// would make this vacuous, and fails here too).
#[test]
fn every_golden_comparison_rejects_an_all_zero_output() {
    let mut vacuous = Vec::new();
    for dir in cases() {
        for (key, want) in npz(&dir.join("expected.npz")) {
            let zeros = Tensor::zeros(want.element_type(), want.shape().to_vec()).unwrap();
            if mismatch(&zeros, &want).is_none() {
                vacuous.push(format!("{} output {key}", dir.display()));
            }
        }
    }
    assert!(
        vacuous.is_empty(),
        "zeros pass the comparison for:\n{}",
        vacuous.join("\n")
    );
}
