//! `irun generate` as a user meets it: text and ids in, OpenVINO's greedy tokens out
//! (models/llm goldens), streamed or as JSON; and clear errors for what it cannot run.

mod common;

use common::{irun, scratch_dir};

use irun_tensor::{read_npz, Tensor};

const LLM: &str = "models/llm/llama_int4_asym";

fn golden(key: &str) -> Vec<i64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/llm/llama_int4_asym/expected.npz"
    );
    let e: Vec<(String, Tensor)> = read_npz(std::fs::File::open(path).unwrap()).unwrap();
    e.into_iter()
        .find(|(k, _)| k == key)
        .unwrap()
        .1
        .values::<i64>()
        .unwrap()
        .to_vec()
}

/// The JSON object `--json` printed, once its `tokens` are checked against `want`.
fn tokens_of(stdout: &str, want: &[i64]) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let got: Vec<i64> = json["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(got, want);
    json
}

fn ids(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

#[test]
fn prompt_ids_give_openvinos_tokens_as_json() {
    let (prompt, tokens) = (golden("prompt_ids"), golden("tokens"));
    let n = tokens.len().to_string();
    let o = irun(&[
        "generate",
        LLM,
        "--prompt-ids",
        &ids(&prompt),
        "--max-new-tokens",
        &n,
        "--json",
        "--threads",
        "2",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let json = tokens_of(&o.stdout, &tokens);
    for key in ["prefill_ms", "decode_ms_per_token", "load_ms"] {
        assert!(json[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {json}");
    }
    assert!(json["text"].is_string());
}

/// The prompt the goldens were made from, through the tokenizer.json beside the model: the
/// same ids, so the same tokens; streamed as text.
#[test]
fn a_text_prompt_goes_through_the_tokenizer() {
    let tokens = golden("tokens");
    let n = tokens.len().to_string();
    let prompt = "The quick brown fox reads the weights";
    let o = irun(&[
        "generate",
        LLM,
        "--prompt",
        prompt,
        "--max-new-tokens",
        &n,
        "--json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let json = tokens_of(&o.stdout, &tokens);
    let streamed = irun(&["generate", LLM, "--prompt", prompt, "--max-new-tokens", &n]);
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    assert_eq!(
        streamed.stdout.trim_end_matches('\n'),
        json["text"].as_str().unwrap()
    );
}

#[test]
fn without_a_tokenizer_ids_stream_and_text_prompts_are_refused() {
    let dir = scratch_dir("generate");
    for f in [
        "openvino_model.xml",
        "openvino_model.bin",
        "config.json",
        "generation_config.json",
    ] {
        std::fs::copy(
            format!("{}/../../{LLM}/{f}", env!("CARGO_MANIFEST_DIR")),
            dir.join(f),
        )
        .unwrap();
    }
    let model = dir.to_str().unwrap();
    let o = irun(&["generate", model, "--prompt", "hello"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--prompt-ids"), "{}", o.stderr);
    let (prompt, tokens) = (golden("prompt_ids"), golden("tokens"));
    let o = irun(&[
        "generate",
        model,
        "--prompt-ids",
        &ids(&prompt),
        "--max-new-tokens",
        "3",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), ids(&tokens[..3]).replace(',', " "));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_generate_cannot_run_is_a_clear_error() {
    let o = irun(&[
        "generate",
        "models/converted/torch_gcn/model.xml",
        "--prompt-ids",
        "1",
    ]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("not a decoder export"), "{}", o.stderr);
    let o = irun(&["generate", LLM]);
    assert_eq!(o.code, 2, "one of --prompt and --prompt-ids is required");
    let o = irun(&["generate", LLM, "--prompt-ids", "1,x"]);
    assert_eq!(o.code, 2);
    let o = irun(&["generate", "models/llm/no_such_model", "--prompt-ids", "1"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}
