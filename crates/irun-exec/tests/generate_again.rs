//! One `Generator` generating again after a generation: each starts from an empty cache, so
//! the second must give the committed golden's tokens as the first did (the run-time
//! inference then starts from facts the last step was given for its cache).

use std::path::Path;

use irun_exec::generate::Generator;
use irun_exec::{Executable, Options};
use irun_tensor::{read_npz, Tensor};

const LLM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/llm/llama_int4_asym"
);

fn golden(key: &str) -> Vec<i64> {
    let file = std::fs::File::open(Path::new(LLM).join("expected.npz")).unwrap();
    let found: Vec<(String, Tensor)> = read_npz(file).unwrap();
    let (_, t) = found.into_iter().find(|(k, _)| k == key).unwrap();
    t.values::<i64>().unwrap().to_vec()
}

#[test]
fn a_second_generation_gives_the_same_tokens() {
    let graph = irun_graph::load(&Path::new(LLM).join("openvino_model.xml"), None).unwrap();
    let exe = Executable::compile(graph, &Options::new().threads(2)).unwrap();
    let (prompt, want) = (golden("prompt_ids"), golden("tokens"));
    let mut generator = Generator::new(&exe).unwrap();
    for round in 0..3 {
        let done = generator
            .generate(&prompt, want.len(), &[], |_| true)
            .unwrap();
        assert_eq!(done.tokens, want, "round {round}");
        // A shorter prompt between: the cache then holds another length.
        let short = generator.generate(&prompt[..2], 3, &[], |_| true).unwrap();
        assert_eq!(short.tokens.len(), 3);
    }
}

/// The attentions read the shared key and value heads (the export repeats each of its KV
/// heads for two query heads), and give the bits the repeated heads give: the prompt's
/// logits and three steps', with the repeat elided and without.
#[test]
fn attention_on_shared_heads_gives_the_repeated_heads_bits() {
    let compile = |fuse: bool| {
        let graph = irun_graph::load(&Path::new(LLM).join("openvino_model.xml"), None).unwrap();
        Executable::compile(graph, &Options::new().threads(2).fuse_broadcasts(fuse)).unwrap()
    };
    let (shared, repeated) = (compile(true), compile(false));
    assert!(shared.shared_head_attentions() > 0);
    assert_eq!(repeated.shared_head_attentions(), 0);
    let (mut a, mut b) = (
        Generator::new(&shared).unwrap(),
        Generator::new(&repeated).unwrap(),
    );
    let prompt = golden("prompt_ids");
    let bits = |t: &Tensor| -> Vec<u32> {
        t.values::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    assert_eq!(
        bits(&a.feed(&prompt).unwrap()),
        bits(&b.feed(&prompt).unwrap())
    );
    for token in [5, 17, 3] {
        assert_eq!(
            bits(&a.feed(&[token]).unwrap()),
            bits(&b.feed(&[token]).unwrap())
        );
    }
}
