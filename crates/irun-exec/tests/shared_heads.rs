//! An attention whose keys and values each arrive through Unsqueeze -> Broadcast ->
//! Reshape: read before the repeat when the chain repeats each head in a row, and the
//! chain run after all when it does more (here it also repeats the sequence), with the
//! bits of the graph run without the fusion either way.

use irun_exec::{Executable, Options};
use irun_graph::testing::{edge, ir, layer, parameter, port, result};
use irun_tensor::Tensor;

/// q `[1, 6, 2, 4]`, kv `[1, 2, ?, 4]`; keys and values each `Reshape(Broadcast(
/// Unsqueeze(kv, axes), target), to)`, the three shape inputs given as inputs.
fn model(dir: &std::path::Path) -> std::path::PathBuf {
    let f = |dims: &[i64]| port(0, "FP32", dims);
    let mut layers = vec![
        parameter(0, "q", "f32", "1,6,2,4", "FP32", &[1, 6, 2, 4]),
        parameter(1, "kv", "f32", "1,2,?,4", "FP32", &[1, 2, -1, 4]),
        parameter(2, "axes", "i64", "1", "I64", &[1]),
        parameter(3, "target", "i64", "5", "I64", &[5]),
        parameter(4, "to", "i64", "4", "I64", &[4]),
    ];
    let mut edges = Vec::new();
    for (first, slot) in [(10, 1), (20, 2)] {
        let (u, b, r) = (first, first + 1, first + 2);
        layers.push(layer(
            u,
            &format!("unsqueeze{u}"),
            "Unsqueeze",
            "opset1",
            None,
            &[f(&[1, 2, -1, 4]), port(1, "I64", &[1])],
            &[port(2, "FP32", &[1, 2, 1, -1, 4])],
        ));
        layers.push(layer(
            b,
            &format!("broadcast{b}"),
            "Broadcast",
            "opset3",
            Some("mode=\"bidirectional\""),
            &[f(&[1, 2, 1, -1, 4]), port(1, "I64", &[5])],
            &[port(2, "FP32", &[-1, -1, -1, -1, -1])],
        ));
        layers.push(layer(
            r,
            &format!("reshape{r}"),
            "Reshape",
            "opset1",
            Some("special_zero=\"false\""),
            &[f(&[-1, -1, -1, -1, -1]), port(1, "I64", &[4])],
            &[port(2, "FP32", &[-1, -1, -1, -1])],
        ));
        edges.extend([
            edge(1, 0, u, 0),
            edge(2, 0, u, 1),
            edge(u, 2, b, 0),
            edge(3, 0, b, 1),
            edge(b, 2, r, 0),
            edge(4, 0, r, 1),
            edge(r, 2, 30, slot),
        ]);
    }
    layers.push(layer(
        30,
        "attention",
        "ScaledDotProductAttention",
        "opset13",
        Some("causal=\"false\""),
        &[
            f(&[1, 6, 2, 4]),
            port(1, "FP32", &[-1, -1, -1, -1]),
            port(2, "FP32", &[-1, -1, -1, -1]),
        ],
        &[port(3, "FP32", &[1, 6, 2, 4])],
    ));
    layers.push(result(31, "y", "FP32", &[1, 6, 2, 4]));
    edges.extend([edge(0, 0, 30, 0), edge(30, 3, 31, 0)]);
    let path = dir.join("model.xml");
    std::fs::write(&path, ir(&layers, &edges)).unwrap();
    path
}

fn inputs(s: usize, target: [i64; 5], to: [i64; 4]) -> Vec<(String, Tensor)> {
    let values = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 + seed * 11) % 23) as f32 * 0.13 - 1.4)
            .collect()
    };
    vec![
        (
            "q".into(),
            Tensor::from_f32(vec![1, 6, 2, 4], values(48, 1)).unwrap(),
        ),
        (
            "kv".into(),
            Tensor::from_f32(vec![1, 2, s, 4], values(8 * s, 2)).unwrap(),
        ),
        ("axes".into(), Tensor::from_i64(vec![1], vec![2]).unwrap()),
        (
            "target".into(),
            Tensor::from_i64(vec![5], target.to_vec()).unwrap(),
        ),
        ("to".into(), Tensor::from_i64(vec![4], to.to_vec()).unwrap()),
    ]
}

#[test]
fn shared_heads_where_the_chain_repeats_heads_and_the_chain_where_it_does_more() {
    let dir = std::env::temp_dir().join(format!("irun-shared-heads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let xml = model(&dir);
    let compile = |fuse: bool| {
        let graph = irun_graph::load(&xml, None).unwrap();
        Executable::compile(graph, &Options::new().threads(2).fuse_broadcasts(fuse)).unwrap()
    };
    let (shared, repeated) = (compile(true), compile(false));
    assert_eq!(shared.shared_head_attentions(), 1);
    let bits = |out: Vec<(String, Tensor)>| -> Vec<u32> {
        out[0]
            .1
            .values::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    let cases = [
        // Each head repeated 3 times in a row: read shared.
        inputs(5, [1, 2, 3, 5, 4], [1, 6, 5, 4]),
        // The one position also repeated 5 times: the chain runs.
        inputs(1, [1, 2, 3, 5, 4], [1, 6, 5, 4]),
    ];
    for case in cases {
        let want = bits(repeated.run(case.clone()).unwrap());
        assert_eq!(bits(shared.run(case).unwrap()), want);
    }
    std::fs::remove_dir_all(&dir).ok();
}
