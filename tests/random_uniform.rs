//! RandomUniform-8 against OpenVINO CPU (models/random, written by
//! tools/gen_random_goldens.py): each model run three times on one compiled model gives
//! OpenVINO's three runs bit for bit (the tensorflow alignment's sequence going on, the
//! pytorch alignment's repeating), at 1 and 2 threads; unseeded draws stay in range and
//! differ between compiled models.

use irun::{Model, Options, Tensor};
use irun_tensor::{read_npz, Storage};

use crate::goldens;

fn npz(path: &std::path::Path) -> Vec<(String, Tensor)> {
    read_npz(std::fs::File::open(path).unwrap()).unwrap()
}

/// Bits of every value (f16/f32/f64 by their patterns, integers as they are).
fn bits(t: &Tensor) -> Vec<u64> {
    match t.storage() {
        Storage::F16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Storage::Bf16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Storage::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        Storage::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        Storage::I32(v) => v.iter().map(|&x| x as u64).collect(),
        Storage::I64(v) => v.iter().map(|&x| x as u64).collect(),
        other => panic!("unexpected output storage {other:?}"),
    }
}

#[test]
fn every_run_draws_openvinos_numbers() {
    for dir in goldens::golden_dirs("random", &["model.xml", "inputs.npz", "expected.npz"]) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let inputs = npz(&dir.join("inputs.npz"));
        let expected = npz(&dir.join("expected.npz"));
        for threads in [1, 2] {
            let exe = Model::open(dir.join("model.xml"))
                .unwrap()
                .compile(&Options::new().threads(threads))
                .unwrap();
            for (run, (key, want)) in expected.iter().enumerate() {
                assert_eq!(key, &format!("run{run}"));
                let got = exe.run(inputs.clone()).unwrap();
                let got = &got[0].1;
                assert_eq!(got.element_type(), want.element_type(), "{name} {key}");
                assert_eq!(got.shape(), want.shape(), "{name} {key}");
                assert_eq!(bits(got), bits(want), "{name} {key} at {threads} thread(s)");
            }
        }
    }
}

/// Both seeds 0: a seed of its own per compiled model, values in [min, max).
#[test]
fn unseeded_draws_differ_between_compiled_models() {
    let xml =
        std::fs::read_to_string(goldens::repo_root().join("models/random/tf_f32_range/model.xml"))
            .unwrap()
            .replace("global_seed=\"7\"", "global_seed=\"0\"")
            .replace("op_seed=\"3\"", "op_seed=\"0\"");
    assert!(xml.contains("global_seed=\"0\"") && xml.contains("op_seed=\"0\""));
    let bin =
        std::fs::read(goldens::repo_root().join("models/random/tf_f32_range/model.bin")).unwrap();
    let draw = || {
        let exe = Model::from_bytes(xml.as_bytes(), bin.clone())
            .unwrap()
            .compile(&Options::new())
            .unwrap();
        exe.run(Vec::<(String, Tensor)>::new()).unwrap()[0]
            .1
            .clone()
    };
    let (a, b) = (draw(), draw());
    assert_ne!(a, b);
    for v in a.values::<f32>().unwrap() {
        assert!((-2.0..3.0).contains(v), "{v}");
    }
}
