//! `irun check` on scatter IRs OpenVINO wrote (valid) and on mutated copies (invalid), from
//! tools/gen_scatter_check_cases.py. Each invalid case must exit 1 and name the diagnostic code,
//! the scatter layer and a port.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn valid_scatter_irs_pass_and_mutations_are_named() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("models/check");
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap())
            .unwrap();
    assert!(manifest.len() >= 20);
    for case in &manifest {
        let name = case["case"].as_str().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_irun"))
            .args(["check", "--json"])
            .arg(root.join(name).join("model.xml"))
            .output()
            .unwrap();
        let code = out.status.code().unwrap();
        let diags: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            code,
            case["exit"].as_i64().unwrap() as i32,
            "{name}: {diags:#?}"
        );
        if code == 1 {
            let named = diags.iter().any(|d| {
                d["code"] == case["code"]
                    && d["layer"]["name"] == case["layer"]
                    && d.get("port").is_some()
                    && d["severity"] == "error"
            });
            assert!(
                named,
                "{name}: expected {} on layer {} with a port, got {diags:#?}",
                case["code"], case["layer"]
            );
        }
    }
}

#[test]
fn check_renders_like_rustc_with_a_verdict() {
    let xml = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("models/check/su3_static_constaxis__axis_range/model.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_irun"))
        .arg("check")
        .arg(&xml)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("error[E0504]: Axis 5 out of the tensor rank range [-2, 1]"),
        "{err}"
    );
    assert!(
        err.contains("su3_static_constaxis__axis_range/model.xml:"),
        "{err}"
    );
    assert!(
        err.contains("= layer: layer 4 \"scatter\" (ScatterUpdate-opset3), input 3 (port id 3)"),
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap()
            .ends_with("invalid: 6 layers, 1 error(s), 0 warning(s)"),
        "{err}"
    );
}
