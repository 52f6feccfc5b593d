//! `irun check` on small IR files with one op each: the shape errors section 4 of "Run real
//! models" lists (a broadcast mismatch, a MatMul inner dimension, a Reshape that changes the
//! element count, a Concat of different ranks) name the layer, the port and both shapes; a
//! type that exists in no OpenVINO opset is an error with a hint, a real but unsupported one a
//! warning.

mod common;

use common::{irun, scratch_dir};

/// Dims as `<dim>` elements.
fn dims(d: &[i64]) -> String {
    d.iter().map(|v| format!("<dim>{v}</dim>")).collect()
}

/// Two f32 Parameters `a` and `b` feeding layer 2 (`ty`, `version`, `data`), whose output
/// (declared `out`) feeds a Result.
fn model(ty: &str, version: &str, data: &str, a: &[i64], b: &[i64], out: &[i64]) -> String {
    let param = |id: u32, name: &str, d: &[i64]| {
        let shape: Vec<String> = d.iter().map(|v| v.to_string()).collect();
        format!(
            "<layer id=\"{id}\" name=\"{name}\" type=\"Parameter\" version=\"opset1\"><data shape=\"{}\" element_type=\"f32\"/><output><port id=\"0\" precision=\"FP32\">{}</port></output></layer>",
            shape.join(","),
            dims(d)
        )
    };
    format!(
        r#"<?xml version="1.0"?>
<net name="t" version="11"><layers>
{}
{}
<layer id="2" name="op" type="{ty}" version="{version}"><data {data}/><input><port id="0" precision="FP32">{}</port><port id="1" precision="FP32">{}</port></input><output><port id="2" precision="FP32">{}</port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32">{}</port></input></layer>
</layers><edges>
<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/><edge from-layer="1" from-port="0" to-layer="2" to-port="1"/><edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
</edges></net>"#,
        param(0, "a", a),
        param(1, "b", b),
        dims(a),
        dims(b),
        dims(out),
        dims(out)
    )
}

fn check(xml: &str) -> common::Outcome {
    let dir = scratch_dir("check-ops");
    let path = dir.join("m.xml");
    std::fs::write(&path, xml).unwrap();
    irun(&["check", path.to_str().unwrap()])
}

#[test]
fn shape_errors_name_layer_port_and_shapes() {
    let cases = [
        (
            model(
                "Add",
                "opset1",
                "auto_broadcast=\"numpy\"",
                &[2, 3],
                &[4],
                &[2, 3],
            ),
            "E0503",
            "[2,3] and [4]",
        ),
        (
            model(
                "MatMul",
                "opset1",
                "transpose_a=\"false\" transpose_b=\"false\"",
                &[3, 4],
                &[5, 2],
                &[3, 2],
            ),
            "E0503",
            "inner dimensions differ",
        ),
        (
            model(
                "Concat",
                "opset1",
                "axis=\"0\"",
                &[2, 3],
                &[2, 3, 1],
                &[4, 3],
            ),
            "E0502",
            "rank",
        ),
    ];
    for (xml, code, text) in cases {
        let o = check(&xml);
        assert_eq!(o.code, 1, "{}", o.stdout);
        let all = format!("{}{}", o.stdout, o.stderr);
        assert!(all.contains(&format!("error[{code}]")), "{all}");
        assert!(all.contains(text), "{all}");
        assert!(all.contains("layer 2 \"op\""), "{all}");
        assert!(all.contains("port"), "{all}");
    }
}

#[test]
fn reshape_changing_the_element_count_is_an_error() {
    // Reshape's shape input as a Parameter has no value; give it a Const instead.
    let xml = r#"<?xml version="1.0"?>
<net name="t" version="11"><layers>
<layer id="0" name="a" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/><output><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>
<layer id="1" name="shape" type="Const" version="opset1"><data element_type="i64" shape="2" offset="0" size="16"/><output><port id="0" precision="I64"><dim>2</dim></port></output></layer>
<layer id="2" name="op" type="Reshape" version="opset1"><data special_zero="false"/><input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port><port id="1" precision="I64"><dim>2</dim></port></input><output><port id="2" precision="FP32"><dim>4</dim><dim>2</dim></port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>4</dim><dim>2</dim></port></input></layer>
</layers><edges>
<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/><edge from-layer="1" from-port="0" to-layer="2" to-port="1"/><edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
</edges></net>"#;
    let dir = scratch_dir("check-reshape");
    std::fs::write(dir.join("m.xml"), xml).unwrap();
    let bin: Vec<u8> = [4i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("m.bin"), bin).unwrap();
    let o = irun(&["check", dir.join("m.xml").to_str().unwrap()]);
    assert_eq!(o.code, 1);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(
        all.contains("error[E0503]")
            && all.contains("[4, 2] is incompatible with input shape [2,3]"),
        "{all}"
    );
}

#[test]
fn unknown_types_are_errors_unsupported_ones_warnings() {
    let typo = model("ScatterFooUpdate", "opset3", "", &[2], &[2], &[2]);
    let o = check(&typo);
    assert_eq!(o.code, 1);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(
        all.contains("error[E0406]") && all.contains("did you mean `ScatterNDUpdate`?"),
        "{all}"
    );

    let empty = model("", "opset1", "", &[2], &[2], &[2]);
    assert_eq!(check(&empty).code, 1);

    let real = model(
        "CTCLoss",
        "opset4",
        "ctc_merge_repeated=\"true\"",
        &[2],
        &[2],
        &[2],
    );
    let o = check(&real);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(format!("{}{}", o.stdout, o.stderr).contains("warning[W0402]"));
}

/// Split's `num_splits` is its output count: beyond the declared ports it is an attribute
/// error, not `num_splits` output facts (a fuzzed 2^62 aborted on a capacity overflow).
#[test]
fn split_counts_beyond_the_declared_outputs_are_attribute_errors() {
    for count in ["2", "4611686018427387904"] {
        let xml = model(
            "Split",
            "opset1",
            &format!("num_splits=\"{count}\""),
            &[0, 2],
            &[],
            &[0, 2],
        );
        let out = check(&xml);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "`num_splits=\"{count}\"` is more than the 1 output port(s) the layer declares"
            )),
            "{}",
            out.stderr
        );
    }
}

/// `info` on a model with an inference error still prints its summary (histogram, inputs,
/// outputs) on stdout; the error goes to stderr and the exit code is 1.
#[test]
fn info_summarises_a_model_with_errors() {
    let o = irun(&[
        "info",
        "models/check/seu12_mean_noinit_interval_constaxis__output_dim/model.xml",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stdout.contains("1  ScatterElementsUpdate-opset12")
            && o.stdout.contains("data  f32 [2..6,5]")
            && o.stdout.contains("Result_616  f32 [2..6,5]"),
        "{}",
        o.stdout
    );
    assert!(o.stderr.contains("error[E0505]"), "{}", o.stderr);
}

/// A layer whose opset names a version of its type that irun does not have is unsupported (a
/// warning), never read as another version: NonMaxSuppression in opset4 is
/// NonMaxSuppression-4, which irun does not have, not the -5 it has.
#[test]
fn versions_irun_does_not_have_are_unsupported_not_misread() {
    let xml = model(
        "NonMaxSuppression",
        "opset4",
        "box_encoding=\"corner\"",
        &[1, 2],
        &[1],
        &[2],
    );
    let o = check(&xml);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(
        all.contains("warning[W0402]") && all.contains("NonMaxSuppression-opset4"),
        "{all}"
    );
}

/// Layers that inference evaluates (a model's shape subgraph, folded to constants) are still
/// checked against their declared ports: a ShapeOf declaring `[3]` for a rank-2 input is an
/// error at the ShapeOf and at the Reshape that reads it.
#[test]
fn declared_dims_in_shape_subgraphs_are_compared() {
    let xml = r#"<?xml version="1.0"?>
<net name="t" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/><output><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>
<layer id="1" name="s" type="ShapeOf" version="opset3"><data output_type="i64"/><input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input><output><port id="1" precision="I64"><dim>3</dim></port></output></layer>
<layer id="2" name="r" type="Reshape" version="opset1"><data special_zero="false"/><input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port><port id="1" precision="I64"><dim>3</dim></port></input><output><port id="2" precision="FP32"><dim>2</dim><dim>3</dim></port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input></layer>
</layers><edges>
<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="2" to-port="1"/><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/><edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
</edges></net>"#;
    let o = check(xml);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("output port 1 declares shape [3], but ShapeOf-3 infers i64 [2]")
            && o.stderr.contains("error[E0506]"),
        "{}",
        o.stderr
    );
}
