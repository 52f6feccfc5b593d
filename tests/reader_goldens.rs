//! The reader against files OpenVINO wrote (models/reader, from tools/gen_reader_goldens.py):
//! every element type decodes to exactly the values OpenVINO decodes, and `irun info` sees the
//! ops, inputs and outputs OpenVINO sees.

use std::path::{Path, PathBuf};

use irun_graph::ModelInfo;
use irun_tensor::{read_npz, Storage, Tensor};
use pretty_assertions::assert_eq;
use serde_json::Value;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/reader")
}

/// Bit patterns, so that NaN, -0.0 and infinities compare exactly.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.storage() {
        Storage::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        Storage::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        Storage::F16(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        Storage::Bf16(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        Storage::Bool(v) => v.iter().map(|&x| x as u64).collect(),
        _ => t
            .to_i64_vec()
            .map(|v| v.into_iter().map(|x| x as u64).collect())
            .unwrap_or_else(|| {
                let Storage::U64(v) = t.storage() else {
                    panic!("unexpected storage")
                };
                v.to_vec()
            }),
    }
}

#[test]
fn every_element_type_decodes_exactly_as_openvino_does() {
    let dir = models().join("element_types");
    let graph = irun_graph::load(&dir.join("model.xml"), None).unwrap();
    assert!(
        !graph.has_errors(),
        "{:?}",
        graph.all_diagnostics().collect::<Vec<_>>()
    );
    let expected = read_npz(std::fs::File::open(dir.join("expected.npz")).unwrap()).unwrap();
    let mut checked = 0;
    for (name, want) in &expected {
        let layer = graph
            .model
            .layers
            .iter()
            .find(|l| &l.name == name)
            .unwrap_or_else(|| panic!("no layer {name}"));
        let info = layer
            .constant
            .as_ref()
            .unwrap_or_else(|| panic!("{name} has no valid weights"));
        let got = graph.model.weights.decode(info).unwrap();
        assert_eq!(got.shape(), want.shape(), "{name}");
        // bf16 comes as raw <V2 words; the packed types are compared on their unpacked values.
        assert_eq!(
            bits(&got),
            bits(want),
            "{name}: {} vs {}",
            got.preview(20),
            want.preview(20)
        );
        checked += 1;
    }
    assert_eq!(checked, 25, "every non-string element type is covered");
    let strings: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(models().join("element_types_strings.json")).unwrap(),
    )
    .unwrap();
    let layer = graph
        .model
        .layers
        .iter()
        .find(|l| l.name == "string")
        .unwrap();
    let got = graph
        .model
        .weights
        .decode(layer.constant.as_ref().unwrap())
        .unwrap();
    assert_eq!(got.storage(), &Storage::String(strings.into()));
}

fn check_info_matches_openvino(case: &str) {
    check_dir_matches_openvino(&models().join(case), "expected_info.json");
}

fn check_dir_matches_openvino(dir: &Path, view_file: &str) {
    let case = dir.display();
    let graph = irun_graph::load(&dir.join("model.xml"), None).unwrap();
    assert!(
        !graph.has_errors(),
        "{:?}",
        graph.all_diagnostics().collect::<Vec<_>>()
    );
    let info = serde_json::to_value(ModelInfo::of(&graph)).unwrap();
    let ov: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(view_file)).unwrap()).unwrap();
    assert_eq!(info["ops"], ov["ops"], "op histogram of {case}");
    let inputs = info["inputs"].as_array().unwrap();
    let ov_inputs = ov["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), ov_inputs.len());
    for (ours, theirs) in inputs.iter().zip(ov_inputs) {
        assert_eq!(ours["names"], theirs["names"]);
        assert_eq!(ours["shape"], theirs["shape"]);
        assert_eq!(ours["element_type"], theirs["element_type"]);
    }
    let outputs = info["outputs"].as_array().unwrap();
    let ov_outputs = ov["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), ov_outputs.len());
    for (ours, theirs) in outputs.iter().zip(ov_outputs) {
        assert_eq!(ours["names"], theirs["names"], "{case}");
        assert_eq!(ours["shape"], theirs["shape"], "{case}: output shape");
        assert_eq!(ours["element_type"], theirs["element_type"], "{case}");
    }
}

#[test]
fn info_matches_openvino_on_ir_v11() {
    check_info_matches_openvino("forms_v11");
    check_info_matches_openvino("element_types");
}

/// The oracle is OpenVINO's IR frontend, before `Core.read_model` rewrites v10 models (f16
/// inputs to f32, Converts on non-f32 outputs): irun reports the file as written.
#[test]
fn info_matches_openvino_on_ir_v10() {
    check_info_matches_openvino("forms_v10");
}

#[test]
fn tensor_names_rt_info_and_compressed_weights_are_read() {
    let graph = irun_graph::load(&models().join("forms_v11/model.xml"), None).unwrap();
    let p = &graph.model.layers[graph.parameters[0]];
    assert_eq!(p.outputs[0].names, vec!["alias,with,comma", "p_static"]);
    let layout = &p.outputs[0].rt_info[0];
    assert_eq!(layout.key(), "layout");
    let convert = graph
        .model
        .layers
        .iter()
        .find(|l| l.type_name == "Convert")
        .unwrap();
    assert_eq!(convert.rt_info[0].key(), "decompression");
    assert_eq!(convert.data_attr("destination_type").unwrap().value, "f32");
    let model_info = graph
        .model
        .rt_info
        .iter()
        .find(|n| n.key() == "model_info")
        .unwrap();
    assert_eq!(model_info.children[0].tag, "layout");
    assert_eq!(model_info.children[0].value(), Some("NCHW"));
}

/// A sample of the ONNX backend node tests and torch models converted by tools/ (the full runs
/// are tools/convert_onnx_suite.py and tools/convert_torch_models.py + tools/compare_info.py).
#[test]
fn info_matches_openvino_on_converted_samples() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/converted");
    let mut n = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if dir.is_dir() {
            check_dir_matches_openvino(&dir, "ov_view.json");
            n += 1;
        }
    }
    assert_eq!(n, 11);
}

/// Output shapes come from inference where it knows them: here the file declares every dim of
/// the scatter output and the Result input as -1, but inference knows the second is 5.
#[test]
fn info_outputs_show_inferred_facts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/check/snd15_sub_dynamic");
    let graph = irun_graph::load(&dir.join("model.xml"), None).unwrap();
    assert_eq!(ModelInfo::of(&graph).outputs[0].shape, "[?,5]");
    let xml = std::fs::read_to_string(dir.join("model.xml")).unwrap();
    let outputs_from = xml
        .find("<output>\n\t\t\t\t<port id=\"3\"")
        .expect("scatter output port");
    let relaxed = format!(
        "{}{}",
        &xml[..outputs_from],
        xml[outputs_from..].replace("<dim>5</dim>", "<dim>-1</dim>")
    );
    let tmp = std::env::temp_dir().join(format!("irun-info-facts-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("model.xml"), relaxed).unwrap();
    std::fs::copy(dir.join("model.bin"), tmp.join("model.bin")).unwrap();
    let graph = irun_graph::load(&tmp.join("model.xml"), None).unwrap();
    assert!(!graph.has_errors());
    let result_port = &graph.layer(graph.results[0]).inputs[0];
    assert_eq!(
        result_port.dims,
        vec![-1, -1],
        "the file declares nothing about the dims"
    );
    assert_eq!(ModelInfo::of(&graph).outputs[0].shape, "[?,5]");
}
