//! What the executor promises about kernels it cannot trust: a kernel whose outputs contradict
//! inference (too few, too many, another element type or shape) is an internal error naming
//! the layer (E0607, exit 1 from the CLI), never a panic further on.

use std::sync::Arc;

use irun_exec::{Executable, Options, RunError};
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
