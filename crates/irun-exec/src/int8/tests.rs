//! The INT8 compile step against the f32 graph, on models written here.

use irun_graph::testing::{edge, ir, layer, parameter, port, result};
use irun_tensor::Tensor;

use super::*;
use crate::Options;

/// A Const layer of `shape` read from `bin` (appended to it).
fn constant(id: u64, ty: &str, shape: &[i64], bytes: Vec<u8>, bin: &mut Vec<u8>) -> String {
    let (offset, size) = (bin.len(), bytes.len());
    bin.extend(bytes);
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    let data = format!(
        "element_type=\"{ty}\" shape=\"{}\" offset=\"{offset}\" size=\"{size}\"",
        dims.join(",")
    );
    let precision = if ty == "i8" { "I8" } else { "FP32" };
    layer(
        id,
        &format!("c{id}"),
        "Const",
        "opset1",
        Some(&data),
        &[],
        &[port(0, precision, shape)],
    )
}

fn f32s(v: impl IntoIterator<Item = f32>) -> Vec<u8> {
    v.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// `x -> FakeQuantize -> Convolution(i8 filters) -> bias -> ReLU -> FakeQuantize (one
/// range per channel) -> a`, and `FakeQuantize -> MaxPool -> Convolution(i8) -> b`.
fn model(dir: &std::path::Path) -> std::path::PathBuf {
    let mut bin = Vec::new();
    let fq = |id, dims: &[i64], range: &[i64]| {
        let data = Some("levels=\"256\" auto_broadcast=\"numpy\"");
        let mut inputs = vec![port(0, "FP32", dims)];
        inputs.extend((1..5).map(|p| port(p, "FP32", range)));
        let outputs = [port(5, "FP32", dims)];
        layer(
            id,
            &format!("fq{id}"),
            "FakeQuantize",
            "opset1",
            data,
            &inputs,
            &outputs,
        )
    };
    let x = [1, 8, 9, 9];
    let (lo, hi) = (-1.0f32, 127.0 / 128.0);
    let mut layers = vec![parameter(0, "x", "f32", "1,8,9,9", "FP32", &x)];
    for (id, v) in [(1, lo), (2, hi), (3, lo), (4, hi)] {
        layers.push(constant(id, "f32", &[], f32s([v]), &mut bin));
    }
    layers.push(fq(5, &x, &[]));
    let codes_a: Vec<u8> = (0..16 * 8 * 9)
        .map(|i: i32| (i * 37 % 255 - 127) as i8 as u8)
        .collect();
    layers.push(constant(6, "i8", &[16, 8, 3, 3], codes_a, &mut bin));
    let convert = Some("destination_type=\"f32\"");
    layers.push(layer(
        7,
        "cvt_a",
        "Convert",
        "opset1",
        convert,
        &[port(0, "I8", &[16, 8, 3, 3])],
        &[port(1, "FP32", &[16, 8, 3, 3])],
    ));
    layers.push(constant(
        8,
        "f32",
        &[16, 1, 1, 1],
        f32s((0..16).map(|c| 0.001 + 0.0001 * c as f32)),
        &mut bin,
    ));
    let numpy = Some("auto_broadcast=\"numpy\"");
    layers.push(layer(
        9,
        "scale_a",
        "Multiply",
        "opset1",
        numpy,
        &[
            port(0, "FP32", &[16, 8, 3, 3]),
            port(1, "FP32", &[16, 1, 1, 1]),
        ],
        &[port(2, "FP32", &[16, 8, 3, 3])],
    ));
    let conv = |pads: &str| {
        format!("strides=\"1,1\" dilations=\"1,1\" pads_begin=\"{pads}\" pads_end=\"{pads}\" auto_pad=\"explicit\"")
    };
    let y = [1, 16, 9, 9];
    layers.push(layer(
        10,
        "conv_a",
        "Convolution",
        "opset1",
        Some(&conv("1,1")),
        &[port(0, "FP32", &x), port(1, "FP32", &[16, 8, 3, 3])],
        &[port(2, "FP32", &y)],
    ));
    layers.push(constant(
        11,
        "f32",
        &[1, 16, 1, 1],
        f32s((0..16).map(|c| 0.05 * c as f32 - 0.3)),
        &mut bin,
    ));
    layers.push(layer(
        12,
        "bias_a",
        "Add",
        "opset1",
        numpy,
        &[port(0, "FP32", &y), port(1, "FP32", &[1, 16, 1, 1])],
        &[port(2, "FP32", &y)],
    ));
    layers.push(layer(
        13,
        "relu_a",
        "ReLU",
        "opset1",
        None,
        &[port(0, "FP32", &y)],
        &[port(1, "FP32", &y)],
    ));
    let per_channel = |id, f: fn(usize) -> f32, bin: &mut Vec<u8>| {
        constant(id, "f32", &[1, 16, 1, 1], f32s((0..16).map(f)), bin)
    };
    layers.push(per_channel(14, |_| 0.0, &mut bin));
    layers.push(per_channel(15, |c| 0.5 + 0.1 * c as f32, &mut bin));
    layers.push(per_channel(16, |_| 0.0, &mut bin));
    layers.push(per_channel(17, |c| 0.5 + 0.1 * c as f32, &mut bin));
    layers.push(fq(18, &y, &[1, 16, 1, 1]));
    layers.push(result(19, "a", "FP32", &y));
    let pooled = [1, 8, 4, 4];
    let pool = "strides=\"2,2\" pads_begin=\"0,0\" pads_end=\"0,0\" kernel=\"2,2\" rounding_type=\"floor\" auto_pad=\"explicit\"";
    layers.push(layer(
        20,
        "pool",
        "MaxPool",
        "opset1",
        Some(pool),
        &[port(0, "FP32", &x)],
        &[port(1, "FP32", &pooled)],
    ));
    let codes_b: Vec<u8> = (0..32 * 8)
        .map(|i: i32| (i * 53 % 251 - 125) as i8 as u8)
        .collect();
    layers.push(constant(21, "i8", &[32, 8, 1, 1], codes_b, &mut bin));
    layers.push(layer(
        22,
        "cvt_b",
        "Convert",
        "opset1",
        convert,
        &[port(0, "I8", &[32, 8, 1, 1])],
        &[port(1, "FP32", &[32, 8, 1, 1])],
    ));
    layers.push(constant(23, "f32", &[], f32s([0.002]), &mut bin));
    layers.push(layer(
        24,
        "scale_b",
        "Multiply",
        "opset1",
        numpy,
        &[port(0, "FP32", &[32, 8, 1, 1]), port(1, "FP32", &[])],
        &[port(2, "FP32", &[32, 8, 1, 1])],
    ));
    let z = [1, 32, 4, 4];
    layers.push(layer(
        25,
        "conv_b",
        "Convolution",
        "opset1",
        Some(&conv("0,0")),
        &[port(0, "FP32", &pooled), port(1, "FP32", &[32, 8, 1, 1])],
        &[port(2, "FP32", &z)],
    ));
    layers.push(result(26, "b", "FP32", &z));
    let edges = [
        edge(0, 0, 5, 0),
        edge(1, 0, 5, 1),
        edge(2, 0, 5, 2),
        edge(3, 0, 5, 3),
        edge(4, 0, 5, 4),
        edge(6, 0, 7, 0),
        edge(7, 1, 9, 0),
        edge(8, 0, 9, 1),
        edge(5, 5, 10, 0),
        edge(9, 2, 10, 1),
        edge(10, 2, 12, 0),
        edge(11, 0, 12, 1),
        edge(12, 2, 13, 0),
        edge(13, 1, 18, 0),
        edge(14, 0, 18, 1),
        edge(15, 0, 18, 2),
        edge(16, 0, 18, 3),
        edge(17, 0, 18, 4),
        edge(18, 5, 19, 0),
        edge(5, 5, 20, 0),
        edge(21, 0, 22, 0),
        edge(22, 1, 24, 0),
        edge(23, 0, 24, 1),
        edge(20, 1, 25, 0),
        edge(24, 2, 25, 1),
        edge(25, 2, 26, 0),
    ];
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("model.xml"), ir(&layers, &edges)).unwrap();
    std::fs::write(dir.join("model.bin"), bin).unwrap();
    dir.join("model.xml")
}

/// The model `build` writes, compiled with the constants prepared (the int8 kernels,
/// the fusions) and without (every op as written), at two threads.
fn compiled_both_ways(
    tag: &str,
    build: fn(&std::path::Path) -> std::path::PathBuf,
) -> (Executable, Executable) {
    let dir = std::env::temp_dir().join(format!("irun_int8_{tag}_{}", std::process::id()));
    let xml = build(&dir);
    let compile = |prepare: bool| {
        let graph = irun_graph::load(&xml, None).unwrap();
        let options = Options::new().threads(2).prepare_constants(prepare);
        Executable::compile(graph, &options).unwrap()
    };
    let both = (compile(true), compile(false));
    std::fs::remove_dir_all(&dir).ok();
    both
}

/// Whether layer `name` runs the integer kernel.
fn integer(exe: &Executable, name: &str) -> bool {
    let layers = &exe.graph.model.layers;
    let n = layers.iter().position(|l| l.name == name).unwrap();
    format!("{:?}", exe.prepared[n]).contains("Int8Conv")
}

/// The residual model's output run both ways, after checking that the two are within
/// one step of the last FakeQuantize (channel `c`'s: `(1.25 + 0.1 c) / 255`), at least
/// 90% of them exactly equal.
fn residual_outputs(
    fast: &Executable,
    reference: &Executable,
    inputs: Vec<(String, Tensor)>,
) -> (Vec<f32>, Vec<f32>) {
    let got = fast.run(inputs.clone()).unwrap();
    let want = reference.run(inputs).unwrap();
    let (out, out_ref) = (
        got[0].1.values::<f32>().unwrap().to_vec(),
        want[0].1.values::<f32>().unwrap().to_vec(),
    );
    let mut exact = 0;
    for (i, (&g, &w)) in out.iter().zip(&out_ref).enumerate() {
        let step = (1.25 + 0.1 * (i / 81) as f32) / 255.0;
        assert!((g - w).abs() <= step * 1.001, "out[{i}]: {g} against {w}");
        exact += usize::from(g == w);
    }
    assert!(
        exact * 10 >= out.len() * 9,
        "{exact} of {} exactly equal",
        out.len()
    );
    (out, out_ref)
}

/// A residual block as NNCF writes ResNet's: `x -> FakeQuantize q` read both by a
/// Convolution (i8 filters) `-> bias -> FakeQuantize -> Add(q, .) -> ReLU ->
/// FakeQuantize (one range per channel) -> out`, the convolution's value the Add's
/// second input.
fn residual_model(dir: &std::path::Path) -> std::path::PathBuf {
    residual_model_fed(dir, false)
}

/// [`residual_model`] whose `q` is the output of another int8 convolution of `x`
/// (`x -> FakeQuantize -> Convolution(i8) -> q`) where `fed`.
fn residual_model_fed(dir: &std::path::Path, fed: bool) -> std::path::PathBuf {
    let mut bin = Vec::new();
    let x = [1, 8, 9, 9];
    let fq = |id, range: &[i64]| {
        let data = Some("levels=\"256\" auto_broadcast=\"numpy\"");
        let mut inputs = vec![port(0, "FP32", &x)];
        inputs.extend((1..5).map(|p| port(p, "FP32", range)));
        let name = format!("fq{id}");
        layer(
            id,
            &name,
            "FakeQuantize",
            "opset1",
            data,
            &inputs,
            &[port(5, "FP32", &x)],
        )
    };
    let numpy = Some("auto_broadcast=\"numpy\"");
    let mut layers = vec![parameter(0, "x", "f32", "1,8,9,9", "FP32", &x)];
    let (lo, hi) = (-1.0f32, 127.0 / 128.0);
    for (id, v) in [(1, lo), (2, hi), (3, lo), (4, hi)] {
        layers.push(constant(id, "f32", &[], f32s([v]), &mut bin));
    }
    layers.push(fq(5, &[]));
    let codes: Vec<u8> = (0..8 * 8 * 9)
        .map(|i: i32| (i * 41 % 253 - 126) as i8 as u8)
        .collect();
    layers.push(constant(6, "i8", &[8, 8, 3, 3], codes, &mut bin));
    let convert = Some("destination_type=\"f32\"");
    let w = [8, 8, 3, 3];
    let cvt = [port(0, "I8", &w)];
    layers.push(layer(
        7,
        "cvt",
        "Convert",
        "opset1",
        convert,
        &cvt,
        &[port(1, "FP32", &w)],
    ));
    let scales = f32s((0..8).map(|c| 0.002 + 0.0003 * c as f32));
    layers.push(constant(8, "f32", &[8, 1, 1, 1], scales, &mut bin));
    let scale_in = [port(0, "FP32", &w), port(1, "FP32", &[8, 1, 1, 1])];
    let scaled = [port(2, "FP32", &w)];
    layers.push(layer(
        9, "scale", "Multiply", "opset1", numpy, &scale_in, &scaled,
    ));
    let pads = "strides=\"1,1\" dilations=\"1,1\" pads_begin=\"1,1\" pads_end=\"1,1\" auto_pad=\"explicit\"";
    let conv_in = [port(0, "FP32", &x), port(1, "FP32", &w)];
    let conv_out = [port(2, "FP32", &x)];
    layers.push(layer(
        10,
        "conv",
        "Convolution",
        "opset1",
        Some(pads),
        &conv_in,
        &conv_out,
    ));
    let bias = f32s((0..8).map(|c| 0.04 * c as f32 - 0.2));
    layers.push(constant(11, "f32", &[1, 8, 1, 1], bias, &mut bin));
    let bias_in = [port(0, "FP32", &x), port(1, "FP32", &[1, 8, 1, 1])];
    let two = [port(2, "FP32", &x)];
    layers.push(layer(12, "bias", "Add", "opset1", numpy, &bias_in, &two));
    for (id, v) in [(13, -0.75f32), (14, 0.75), (15, -0.75), (16, 0.75)] {
        layers.push(constant(id, "f32", &[], f32s([v]), &mut bin));
    }
    layers.push(fq(17, &[]));
    let add_in = [port(0, "FP32", &x), port(1, "FP32", &x)];
    layers.push(layer(18, "residual", "Add", "opset1", numpy, &add_in, &two));
    let relu_in = [port(0, "FP32", &x)];
    layers.push(layer(
        19,
        "relu",
        "ReLU",
        "opset1",
        None,
        &relu_in,
        &[port(1, "FP32", &x)],
    ));
    let per_channel = |id, f: fn(usize) -> f32, bin: &mut Vec<u8>| {
        constant(id, "f32", &[1, 8, 1, 1], f32s((0..8).map(f)), bin)
    };
    // Below 0 too, so that the ReLU before it shows.
    layers.push(per_channel(20, |_| -0.25, &mut bin));
    layers.push(per_channel(21, |c| 1.0 + 0.1 * c as f32, &mut bin));
    layers.push(per_channel(22, |_| -0.25, &mut bin));
    layers.push(per_channel(23, |c| 1.0 + 0.1 * c as f32, &mut bin));
    layers.push(fq(24, &[1, 8, 1, 1]));
    layers.push(result(25, "out", "FP32", &x));
    let mut edges = vec![edge(6, 0, 7, 0), edge(7, 1, 9, 0)];
    if fed {
        // Level 128 is 0, as the integer kernel needs.
        let top = 2.0 * 127.0 / 128.0;
        for (id, v) in [(26, -2.0f32), (27, top), (28, -2.0), (29, top)] {
            layers.push(constant(id, "f32", &[], f32s([v]), &mut bin));
        }
        layers.push(fq(30, &[]));
        let codes: Vec<u8> = (0..8 * 8 * 9)
            .map(|i: i32| (i * 29 % 251 - 125) as i8 as u8)
            .collect();
        layers.push(constant(31, "i8", &[8, 8, 3, 3], codes, &mut bin));
        layers.push(layer(
            32,
            "cvt0",
            "Convert",
            "opset1",
            convert,
            &cvt,
            &[port(1, "FP32", &w)],
        ));
        let scales = f32s((0..8).map(|c| 0.003 + 0.0002 * c as f32));
        layers.push(constant(33, "f32", &[8, 1, 1, 1], scales, &mut bin));
        layers.push(layer(
            34, "scale0", "Multiply", "opset1", numpy, &scale_in, &scaled,
        ));
        layers.push(layer(
            35,
            "conv0",
            "Convolution",
            "opset1",
            Some(pads),
            &conv_in,
            &conv_out,
        ));
        edges.extend([edge(0, 0, 30, 0), edge(30, 5, 35, 0), edge(35, 2, 5, 0)]);
        edges.extend((26..30).map(|id| edge(id, 0, 30, id - 25)));
        edges.extend([edge(31, 0, 32, 0), edge(32, 1, 34, 0), edge(33, 0, 34, 1)]);
        edges.push(edge(34, 2, 35, 1));
    } else {
        edges.push(edge(0, 0, 5, 0));
    }
    edges.extend((1..5).map(|p| edge(p, 0, 5, p)));
    edges.extend([edge(8, 0, 9, 1), edge(5, 5, 10, 0), edge(9, 2, 10, 1)]);
    edges.extend([edge(10, 2, 12, 0), edge(11, 0, 12, 1), edge(12, 2, 17, 0)]);
    edges.extend((13..17).map(|id| edge(id, 0, 17, id - 12)));
    edges.extend([edge(5, 5, 18, 0), edge(17, 5, 18, 1), edge(18, 2, 19, 0)]);
    edges.push(edge(19, 1, 24, 0));
    edges.extend((20..24).map(|id| edge(id, 0, 24, id - 19)));
    edges.push(edge(24, 5, 25, 0));
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("model.xml"), ir(&layers, &edges)).unwrap();
    std::fs::write(dir.join("model.bin"), bin).unwrap();
    dir.join("model.xml")
}

/// The convolution of a residual block reads the quantized input's values (the Add
/// reads them too) and applies its bias, its FakeQuantize, the Add, the ReLU and the last
/// FakeQuantize itself; the outputs equal the f32 graph's within one step of the last
/// FakeQuantize, most of them exactly.
#[test]
fn a_residual_block_runs_in_its_convolution() {
    let (fast, reference) = compiled_both_ways("res", residual_model);
    if Int8Conv::fast_here() {
        assert!(integer(&fast, "conv"));
        assert_eq!(
            fast.fused(),
            5,
            "bias, FakeQuantize, Add, ReLU, FakeQuantize"
        );
    }
    let x: Vec<f32> = (0..8 * 81)
        .map(|i| ((i * 31 % 101) as f32 - 50.0) / 45.0)
        .collect();
    let inputs = vec![(
        "x".to_string(),
        Tensor::from_f32(vec![1, 8, 9, 9], x).unwrap(),
    )];
    let (out, out_ref) = residual_outputs(&fast, &reference, inputs);
    let (zero, top) = (
        out_ref.iter().filter(|&&v| v == 0.0).count(),
        out_ref.iter().filter(|&&v| v > 0.0 && v < 1.0).count(),
    );
    assert!(
        zero > 20 && top > out.len() / 4,
        "the ReLU and the levels both at work"
    );
}

/// Where the residual block's input is another int8 convolution's output, that
/// convolution writes its FakeQuantize's levels (u8), which the block's convolution
/// reads both as its input and as its residual addend; the outputs still equal the f32
/// graph's within one step of the last FakeQuantize, most of them exactly.
#[test]
fn a_residual_block_reads_the_levels_of_the_convolution_before() {
    let (fast, reference) = compiled_both_ways("fed", |dir| residual_model_fed(dir, true));
    if Int8Conv::fast_here() {
        assert!(integer(&fast, "conv0"), "conv0");
        assert!(integer(&fast, "conv"), "conv");
        assert_eq!(fast.levels_handovers(), 1, "conv0 writes levels");
    }
    let x: Vec<f32> = (0..8 * 81)
        .map(|i| ((i * 37 % 103) as f32 - 51.0) / 40.0)
        .collect();
    let inputs = vec![(
        "x".to_string(),
        Tensor::from_f32(vec![1, 8, 9, 9], x.clone()).unwrap(),
    )];
    let (out, out_ref) = residual_outputs(&fast, &reference, inputs);
    assert!(out_ref.iter().filter(|&&v| v > 0.0).count() > out.len() / 4);
    // A NaN input has no level: the first convolution writes f32 for that run, and
    // the NaN reaches the windows that read it.
    let mut with_nan = x;
    with_nan[40] = f32::NAN;
    let inputs = vec![(
        "x".to_string(),
        Tensor::from_f32(vec![1, 8, 9, 9], with_nan).unwrap(),
    )];
    let got = fast.run(inputs.clone()).unwrap();
    let want = reference.run(inputs).unwrap();
    let nans = |v: &[f32]| v.iter().map(|x| x.is_nan()).collect::<Vec<_>>();
    let (out, out_ref) = (
        got[0].1.values::<f32>().unwrap(),
        want[0].1.values::<f32>().unwrap(),
    );
    assert!(out_ref.iter().any(|v| v.is_nan()));
    assert_eq!(nans(out), nans(out_ref));
}

/// Both convolutions take the integer kernel where the CPU has VNNI (the first reading
/// the FakeQuantize's input, the second the pooled levels), the per-channel
/// FakeQuantize after the first is applied by it; the outputs equal the f32 graph's
/// (unprepared, every op as written) up to f32 rounding, and after the last
/// FakeQuantize within one of its steps, most of them exactly.
#[test]
fn int8_convolutions_give_the_f32_graphs_results() {
    let (fast, reference) = compiled_both_ways("pool", model);
    if Int8Conv::fast_here() {
        assert!(
            integer(&fast, "conv_a") && integer(&fast, "conv_b"),
            "both convolutions in integers"
        );
        assert!(
            fast.fused() >= 3,
            "bias, ReLU and the FakeQuantize in conv_a's epilogue"
        );
    }
    let x: Vec<f32> = (0..8 * 81)
        .map(|i| ((i * 29 % 97) as f32 - 48.0) / 40.0)
        .collect();
    let inputs = vec![(
        "x".to_string(),
        Tensor::from_f32(vec![1, 8, 9, 9], x).unwrap(),
    )];
    let (got, want) = (
        fast.run(inputs.clone()).unwrap(),
        reference.run(inputs).unwrap(),
    );
    let values = |out: &[(String, Tensor)], i: usize| out[i].1.values::<f32>().unwrap().to_vec();
    let (a, a_ref) = (values(&got, 0), values(&want, 0));
    let mut exact = 0;
    for (i, (&g, &w)) in a.iter().zip(&a_ref).enumerate() {
        let step = (0.5 + 0.1 * (i / 81) as f32) / 255.0;
        assert!((g - w).abs() <= step * 1.001, "a[{i}]: {g} against {w}");
        exact += usize::from(g == w);
    }
    assert!(
        exact * 10 >= a.len() * 9,
        "{exact} of {} exactly equal",
        a.len()
    );
    assert!(
        a_ref.iter().filter(|&&v| v > 0.0).count() > a.len() / 4,
        "a test of something"
    );
    let (b, b_ref) = (values(&got, 1), values(&want, 1));
    let largest = b_ref.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (&g, &w)) in b.iter().zip(&b_ref).enumerate() {
        assert!((g - w).abs() <= 1e-5 * largest, "b[{i}]: {g} against {w}");
    }
}
