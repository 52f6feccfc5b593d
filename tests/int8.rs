//! NNCF INT8 networks (models/int8, written by tools/make_int8_irs.py): FakeQuantize on the
//! activations, i8 weights with scales. A FakeQuantize level is a step function, so two
//! correct f32 implementations differ by one level wherever their results straddle a
//! rounding boundary, and each flip spreads through the layers after it. OpenVINO CPU's own
//! two executions (its int8 kernels, `expected.npz`; its f32 ops with the low-precision
//! transformations off, `emulated.npz`) differ that way; irun, which computes the spec's f32
//! formula, must be within half that spread of the f32 execution and give the same top class,
//! at 1 and 2 threads.

use std::path::Path;

use irun::{Model, Options, Tensor};
use irun_tensor::read_npz;

use crate::goldens;

fn npz(path: &Path) -> Vec<(String, Tensor)> {
    read_npz(std::fs::File::open(path).unwrap()).unwrap()
}

fn f32s<'a>(outputs: &'a [(String, Tensor)], key: &str) -> &'a [f32] {
    let t = &outputs.iter().find(|(k, _)| k == key).unwrap().1;
    t.values::<f32>().unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn top(v: &[f32]) -> usize {
    irun::argmax(v) as usize
}

#[test]
fn int8_networks_stay_within_openvinos_own_spread() {
    let required = ["model.xml", "inputs.npz", "expected.npz", "emulated.npz"];
    for dir in goldens::golden_dirs("int8", &required) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let inputs = npz(&dir.join("inputs.npz"));
        let (int8, f32_ops) = (
            npz(&dir.join("expected.npz")),
            npz(&dir.join("emulated.npz")),
        );
        for threads in [1, 2] {
            let exe = Model::open(dir.join("model.xml"))
                .unwrap()
                .compile(&Options::new().threads(threads))
                .unwrap();
            let got = exe.run(inputs.clone()).unwrap();
            for (key, _) in &int8 {
                let (g, i8s, f) = (f32s(&got, key), f32s(&int8, key), f32s(&f32_ops, key));
                let spread = max_diff(i8s, f);
                let off = max_diff(g, f);
                assert!(
                    spread > 0.0,
                    "{name}: the goldens show no spread to measure against"
                );
                assert!(
                    off <= 0.5 * spread,
                    "{name} {key} at {threads} thread(s): {off} from OpenVINO's f32 execution, whose int8 one is {spread} from it"
                );
                assert_eq!(top(g), top(f), "{name} {key}: top class");
                assert_eq!(
                    top(i8s),
                    top(f),
                    "{name} {key}: the goldens disagree on the top class"
                );
            }
        }
    }
}
