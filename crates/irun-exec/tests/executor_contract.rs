//! What the executor promises about kernels it cannot trust: a kernel whose outputs contradict
//! inference (too few, too many, another element type or shape) is an internal error naming
//! the layer (E0607, exit 1 from the CLI), never a panic further on. And what it promises
//! about the memory limit: it counts what a run really allocates, outputs whose shapes are
//! known only at run time measured on their actual inputs, read as the op sees them.

use std::sync::Arc;

use irun_exec::{Executable, Options, RunError};
use irun_graph::testing::{edge, ir, layer, parameter, port, result};
use irun_ops::{Fact, Op, OpError, Value};
use irun_tensor::Tensor;

const CASE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/scatter/seu12_mean_floor_negative"
);

/// How a broken kernel rewrites the real kernel's outputs.
type Breakage = fn(Vec<Value>) -> Vec<Value>;

/// Wraps the real op: infers as it does, but returns `broken(real outputs)` from `eval`.
#[derive(Debug)]
struct Broken {
    real: Box<dyn Op>,
    how: Breakage,
}

impl Op for Broken {
    fn name(&self) -> &'static str {
        self.real.name()
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        self.real.infer(inputs)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.real.eval(inputs).map(self.how)
    }
}

fn run_with(how: Breakage) -> RunError {
    let xml = format!("{CASE}/model.xml");
    let mut graph = irun_graph::load(xml.as_ref(), None).unwrap();
    let n = (0..graph.nodes.len())
        .find(|&n| graph.layer(n).type_name == "ScatterElementsUpdate")
        .unwrap();
    let real = graph.ops[n].take().unwrap();
    graph.ops[n] = Some(Box::new(Broken { real, how }));
    let exe = Executable::compile(graph, &Options::default()).unwrap();
    let inputs =
        irun_tensor::read_npz(std::fs::File::open(format!("{CASE}/inputs.npz")).unwrap()).unwrap();
    exe.run(inputs).unwrap_err()
}

#[test]
fn kernel_outputs_that_contradict_inference_are_internal_errors() {
    let cases: [(Breakage, &str); 4] = [
        (
            |_| Vec::new(),
            "the kernel returned 0 output(s), the layer has 1",
        ),
        (
            |v| vec![v[0].clone(), v[0].clone()],
            "the kernel returned 2 output(s), the layer has 1",
        ),
        (
            |_| vec![Arc::new(Tensor::from_f32(vec![4], vec![0.0; 4]).unwrap())],
            "output 0 is f32 [4], inference said i32 [4]",
        ),
        (
            |_| vec![Arc::new(Tensor::from_i32(vec![2], vec![0; 2]).unwrap())],
            "output 0 is i32 [2], inference said i32 [4]",
        ),
    ];
    for (how, want) in cases {
        let e = run_with(how);
        assert_eq!(e.code, Some("E0607"), "{e}");
        assert!(e.message.contains(want), "{}", e.message);
        assert!(e.message.contains("internal error"), "{}", e.message);
        assert!(e.layer.is_some(), "the layer is named: {e}");
    }
}

/// A convolution whose output is handed over channel-last to a ROIAlign whose box count
/// comes from a Broadcast to a shape the model gets as an input, so the ROIAlign's output
/// size is known only at run time. The check before it must read the image as `[1, 1, 16,
/// 16]` (one channel), not as the `[1, 16, 16, 1]` it is laid out as: 2000 boxes need 32 KB,
/// not the 512 KB that sixteen channels would, and fit a 200 KB limit.
#[test]
fn an_image_handed_over_channel_last_is_measured_by_its_own_shape() {
    let dir = std::env::temp_dir().join(format!("irun_memory_limit_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let xml = ir(
        &[
            parameter(0, "image", "f32", "1,1,16,16", "FP32", &[1, 1, 16, 16]),
            layer(
                1,
                "weights",
                "Const",
                "opset1",
                Some("element_type=\"f32\" shape=\"1,1,1,1\" offset=\"0\" size=\"4\""),
                &[],
                &[port(0, "FP32", &[1, 1, 1, 1])],
            ),
            layer(
                2,
                "conv",
                "Convolution",
                "opset1",
                Some("strides=\"1,1\" dilations=\"1,1\" pads_begin=\"0,0\" pads_end=\"0,0\" auto_pad=\"explicit\""),
                &[port(0, "FP32", &[1, 1, 16, 16]), port(1, "FP32", &[1, 1, 1, 1])],
                &[port(2, "FP32", &[1, 1, 16, 16])],
            ),
            parameter(3, "rois_shape", "i64", "2", "I64", &[2]),
            layer(
                4,
                "one_box",
                "Const",
                "opset1",
                Some("element_type=\"f32\" shape=\"1,4\" offset=\"4\" size=\"16\""),
                &[],
                &[port(0, "FP32", &[1, 4])],
            ),
            layer(
                5,
                "boxes",
                "Broadcast",
                "opset3",
                Some("mode=\"numpy\""),
                &[port(0, "FP32", &[1, 4]), port(1, "I64", &[2])],
                &[port(2, "FP32", &[-1, -1])],
            ),
            parameter(6, "count", "i64", "1", "I64", &[1]),
            layer(
                7,
                "zero",
                "Const",
                "opset1",
                Some("element_type=\"i32\" shape=\"\" offset=\"20\" size=\"4\""),
                &[],
                &[port(0, "I32", &[])],
            ),
            layer(
                8,
                "batch",
                "Broadcast",
                "opset3",
                Some("mode=\"numpy\""),
                &[port(0, "I32", &[]), port(1, "I64", &[1])],
                &[port(2, "I32", &[-1])],
            ),
            layer(
                9,
                "pool",
                "ROIAlign",
                "opset9",
                Some("pooled_h=\"2\" pooled_w=\"2\" sampling_ratio=\"2\" spatial_scale=\"1\" mode=\"avg\" aligned_mode=\"asymmetric\""),
                &[port(0, "FP32", &[1, 1, 16, 16]), port(1, "FP32", &[-1, 4]), port(2, "I32", &[-1])],
                &[port(3, "FP32", &[-1, 1, 2, 2])],
            ),
            result(10, "out", "FP32", &[-1, 1, 2, 2]),
        ],
        &[
            edge(0, 0, 2, 0),
            edge(1, 0, 2, 1),
            edge(4, 0, 5, 0),
            edge(3, 0, 5, 1),
            edge(7, 0, 8, 0),
            edge(6, 0, 8, 1),
            edge(2, 2, 9, 0),
            edge(5, 2, 9, 1),
            edge(8, 2, 9, 2),
            edge(9, 3, 10, 0),
        ],
    );
    let mut bin = Vec::new();
    for v in [2.0f32, 0.0, 0.0, 8.0, 8.0] {
        bin.extend(v.to_le_bytes());
    }
    bin.extend(0i32.to_le_bytes());
    std::fs::write(dir.join("model.xml"), xml).unwrap();
    std::fs::write(dir.join("model.bin"), bin).unwrap();
    let graph = irun_graph::load(&dir.join("model.xml"), None).unwrap();
    let exe = Executable::compile(graph, &Options::new().threads(2).memory_limit(200_000)).unwrap();
    assert_eq!(
        exe.channels_last_handovers(),
        1,
        "the test needs the handover"
    );
    let boxes = 2000;
    let inputs = vec![
        (
            "image".to_string(),
            Tensor::from_f32(vec![1, 1, 16, 16], (0..256).map(|i| i as f32).collect()).unwrap(),
        ),
        (
            "rois_shape".to_string(),
            Tensor::from_i64(vec![2], vec![boxes, 4]).unwrap(),
        ),
        (
            "count".to_string(),
            Tensor::from_i64(vec![1], vec![boxes]).unwrap(),
        ),
    ];
    let out = exe.run(inputs).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let (_, pooled) = &out[0];
    assert_eq!(pooled.shape(), &[boxes as usize, 1, 2, 2]);
    // Each box covers x, y in [0, 8): a bin of it averages twice the image (16y + x) at its
    // four samples, 1 and 3 from its start, so at its centre.
    let first = &pooled.values::<f32>().unwrap()[..4];
    let bin_mean = |y: f32, x: f32| 2.0 * (16.0 * y + x);
    assert_eq!(
        first,
        &[
            bin_mean(2.0, 2.0),
            bin_mean(2.0, 6.0),
            bin_mean(6.0, 2.0),
            bin_mean(6.0, 6.0)
        ]
    );
}
