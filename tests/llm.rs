//! LLMs as optimum-intel exports them, their weights compressed by NNCF in every format
//! (models/llm, written by tools/make_llm_irs.py with OpenVINO CPU's answers at f32
//! inference precision): the prompt's logits within 1e-4 of OpenVINO's and OpenVINO's greedy
//! tokens, at 1 and 2 threads; and compressed weights that stay compressed.

use std::path::{Path, PathBuf};

use irun::{end_tokens, Model, Options};
use irun_tensor::{read_npz, Tensor};

use crate::goldens;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/llm")
}

fn expected(dir: &Path) -> Vec<(String, Tensor)> {
    read_npz(std::fs::File::open(dir.join("expected.npz")).unwrap()).unwrap()
}

fn get<'a>(e: &'a [(String, Tensor)], key: &str) -> &'a Tensor {
    &e.iter().find(|(k, _)| k == key).unwrap().1
}

#[test]
fn every_format_gives_openvinos_logits_and_greedy_tokens() {
    let dirs = goldens::golden_dirs(
        "llm",
        &["openvino_model.xml", "openvino_model.bin", "expected.npz"],
    );
    assert_eq!(dirs.len(), 24, "3 architectures x 8 weight formats");
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let e = expected(&dir);
        let prompt = get(&e, "prompt_ids").values::<i64>().unwrap().to_vec();
        let want_logits = get(&e, "prefill_logits");
        let want_tokens = get(&e, "tokens").values::<i64>().unwrap();
        let end = end_tokens(&dir).unwrap();
        for threads in [1, 2] {
            let exe = Model::open(dir.join("openvino_model.xml"))
                .unwrap()
                .compile(&Options::new().threads(threads))
                .unwrap();
            let mut generator = exe.generator().unwrap();
            let logits = generator.feed(&prompt).unwrap();
            assert_eq!(logits.shape(), want_logits.shape(), "{name}");
            let (got, want) = (
                logits.values::<f32>().unwrap(),
                want_logits.values::<f32>().unwrap(),
            );
            let worst = got
                .iter()
                .zip(want)
                .map(|(g, w)| (g - w).abs())
                .fold(0f32, f32::max);
            assert!(
                worst <= 1e-4,
                "{name} at {threads} thread(s): logits off by {worst}"
            );
            let done = generator
                .generate(&prompt, want_tokens.len(), &end, |_| true)
                .unwrap();
            assert_eq!(done.tokens, want_tokens, "{name} at {threads} thread(s)");
        }
    }
}

/// The compressed weights are read from the mapped file as stored: the executable holds far
/// less than the f32 weights would take (and less than the file itself), before and after
/// runs.
#[test]
fn compressed_weights_are_never_widened() {
    for name in [
        "llama_int4_asym",
        "qwen3_int8_sym",
        "phi3_nf4",
        "llama_mxfp4",
    ] {
        let dir = root().join(name);
        let bin = std::fs::metadata(dir.join("openvino_model.bin"))
            .unwrap()
            .len();
        let exe = irun_exec::Executable::compile(
            irun_graph::load(&dir.join("openvino_model.xml"), None).unwrap(),
            &Options::new().threads(2),
        )
        .unwrap();
        let mut generator = irun_exec::generate::Generator::new(&exe).unwrap();
        generator.generate(&[1, 2, 3], 3, &[], |_| true).unwrap();
        let held = exe.held_bytes();
        assert!(
            held < bin,
            "{name}: holds {held} bytes beside a {bin}-byte weights file"
        );
    }
    // What "widened" would cost: the f32 export's weights file is more than 4 times the
    // int4 one's.
    let f32_bin = std::fs::metadata(root().join("llama_f32/openvino_model.bin"))
        .unwrap()
        .len();
    let int4_bin = std::fs::metadata(root().join("llama_int4_asym/openvino_model.bin"))
        .unwrap()
        .len();
    assert!(int4_bin * 4 < f32_bin);
}

#[test]
fn a_model_without_state_is_not_a_decoder() {
    let exe = Model::open(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/converted/torch_gcn/model.xml"),
    )
    .unwrap()
    .compile(&Options::new())
    .unwrap();
    let e = exe.generator().unwrap_err();
    assert!(e.message.contains("not a decoder export"), "{}", e.message);
}
