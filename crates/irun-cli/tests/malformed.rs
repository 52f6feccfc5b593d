//! Malformed models through the `irun` binary: each gets a clear error naming the problem and
//! its place, exit code 1 (bad model) or 2 (unreadable file), and never a panic.

mod common;

use common::{irun, scratch_dir, Outcome};
use std::path::Path;

use irun_graph::testing::{edge, ir, layer, parameter, port, result};

/// Writes model.xml (+ model.bin when given) and runs `irun info` on it.
fn info(xml: &[u8], bin: Option<&[u8]>) -> Outcome {
    let d = scratch_dir("malformed");
    std::fs::write(d.join("model.xml"), xml).unwrap();
    if let Some(b) = bin {
        std::fs::write(d.join("model.bin"), b).unwrap();
    }
    irun(&["info", d.join("model.xml").to_str().unwrap()])
}

#[track_caller]
fn expect_error(o: &Outcome, code: i32, needles: &[&str]) {
    assert_eq!(o.code, code, "exit code; stderr:\n{}", o.stderr);
    for n in needles {
        assert!(o.stderr.contains(n), "stderr lacks {n:?}:\n{}", o.stderr);
    }
}

fn const_layer(id: u64, data: &str, dims: &[i64]) -> String {
    layer(
        id,
        "c",
        "Const",
        "opset1",
        Some(data),
        &[],
        &[port(0, "FP32", dims)],
    )
}

/// Const(0) -> Result(1)
fn const_model(data: &str, dims: &[i64]) -> String {
    ir(
        &[const_layer(0, data, dims), result(1, "out", "FP32", dims)],
        &[edge(0, 0, 1, 0)],
    )
}

// ---- files that are not IR XML at all ----

#[test]
fn missing_file_and_directory_are_usage_errors() {
    let o = irun(&["info", "/nonexistent/model.xml"]);
    expect_error(&o, 2, &["E0101", "cannot open /nonexistent/model.xml"]);
    let d = scratch_dir("malformed");
    let o = irun(&["info", d.to_str().unwrap()]);
    expect_error(&o, 2, &["is a directory"]);
}

#[test]
fn bad_command_line_is_exit_2() {
    assert_eq!(irun(&["info"]).code, 2);
    assert_eq!(irun(&["frobnicate", "x.xml"]).code, 2);
}

#[test]
fn non_xml_files_fail_fast() {
    // An ONNX protobuf named .xml.
    expect_error(
        &info(b"\x08\x07\x12\x07pytorch\x1a\x032.1", None),
        1,
        &["E0102", "is not an XML file", "08 07 12"],
    );
    expect_error(&info(b"", None), 1, &["is empty"]);
    expect_error(&info(b"   \n  ", None), 1, &["is empty"]);
    let o = irun(&["info", "/dev/zero"]);
    expect_error(&o, 1, &["is not an XML file", "00 00 00"]);
}

#[test]
fn not_ir_roots_and_versions() {
    expect_error(
        &info(b"<model version=\"11\"/>", None),
        1,
        &["E0105", "root element is <model>", ":1:1"],
    );
    expect_error(
        &info(b"<net version=\"12\"><layers/></net>", None),
        1,
        &["IR version \"12\" is not supported", ":1:6"],
    );
    expect_error(
        &info(b"<net version=\"9\"/>", None),
        1,
        &["IR version \"9\""],
    );
    expect_error(
        &info(b"<net name=\"x\"/>", None),
        1,
        &["no `version` attribute"],
    );
}

// ---- XML that is not well-formed ----

#[test]
fn unclosed_mismatched_and_duplicate_attributes() {
    expect_error(
        &info(b"<net version=\"11\">\n  <layers>\n</net>", None),
        1,
        &["E0103", "model.xml:3:"],
    );
    expect_error(
        &info(b"<net version=\"11\">\n  <layers>\n", None),
        1,
        &["<layers> is not closed", "model.xml:2:3"],
    );
    expect_error(
        &info(b"<net version=\"11\" version=\"10\"/>", None),
        1,
        &["E0103", "bad attribute in <net>"],
    );
    expect_error(
        &info(b"<net version=\"11\"/>\n<net version=\"11\"/>", None),
        1,
        &["second root element <net>", "model.xml:2:1"],
    );
    expect_error(
        &info(b"<net version=\"11\"><layers></net></layers>", None),
        1,
        &["E0103"],
    );
}

#[test]
fn invalid_utf8_names_line_and_column() {
    expect_error(
        &info(b"<net version=\"11\">\n<layers name=\"\xff\"/></net>", None),
        1,
        &["invalid UTF-8", "model.xml:2:15"],
    );
}

#[test]
fn entities_are_never_expanded() {
    let xxe = b"<?xml version=\"1.0\"?>\n<!DOCTYPE net [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n<net version=\"11\"><layers>&xxe;</layers></net>";
    let o = info(xxe, None);
    expect_error(&o, 1, &["E0104", "&xxe;", "never expanded", "model.xml:3:"]);
    assert!(
        !o.stderr.contains("root:"),
        "external entity content leaked"
    );
    let laughs = b"<!DOCTYPE net [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>\n<net version=\"11\" name=\"&b;\"/>";
    expect_error(&info(laughs, None), 1, &["E0104", "never expanded"]);
    // A DOCTYPE nothing uses is fine, and predefined entities are text.
    let ok = format!(
        "<!DOCTYPE net>\n{}",
        const_model(
            "element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\"",
            &[]
        )
        .replace("name=\"c\"", "name=\"a &amp; b\"")
        .replace("<?xml version=\"1.0\"?>\n", "")
    );
    let o = info(ok.as_bytes(), Some(&[0; 4]));
    assert_eq!(o.code, 0, "{}", o.stderr);
}

// ---- IR structure ----

#[test]
fn bad_dims_are_errors_not_silently_one() {
    for bad in ["?", "1..3", "-2", "", "3.5", "99999999999999999999"] {
        let xml = ir(
            &[
                parameter(0, "x", "f32", "2", "FP32", &[2]),
                result(1, "y", "FP32", &[2]),
            ],
            &[edge(0, 0, 1, 0)],
        )
        .replacen("<dim>2</dim>", &format!("<dim>{bad}</dim>"), 1);
        expect_error(
            &info(xml.as_bytes(), None),
            1,
            &[
                "E0202",
                &format!("<dim>{bad}</dim>"),
                "is not an integer >= -1",
                "layer 0 \"x\" (Parameter-opset1)",
            ],
        );
    }
}

#[test]
fn bad_precision_ids_and_missing_attributes() {
    let base = ir(
        &[
            parameter(0, "x", "f32", "2", "FP32", &[2]),
            result(1, "y", "FP32", &[2]),
        ],
        &[edge(0, 0, 1, 0)],
    );
    expect_error(
        &info(base.replacen("FP32", "FP33", 1).as_bytes(), None),
        1,
        &["E0203", "unknown precision \"FP33\""],
    );
    expect_error(
        &info(
            base.replace("layer id=\"1\"", "layer id=\"one\"")
                .as_bytes(),
            None,
        ),
        1,
        &[
            "E0201",
            "`id=\"one\"` of <layer id=\"one\" name=\"y\" type=\"Result\" version=\"opset1\"> is not an unsigned integer",
        ],
    );
    expect_error(
        &info(base.replace(" type=\"Result\"", "").as_bytes(), None),
        1,
        &["<layer id=\"1\" name=\"y\" version=\"opset1\"> has no `type` attribute"],
    );
    for bad_id in ["-1", "", "0x1", "1.5"] {
        expect_error(
            &info(
                base.replace("layer id=\"1\"", &format!("layer id=\"{bad_id}\""))
                    .as_bytes(),
                None,
            ),
            1,
            &[&format!(
                "`id=\"{bad_id}\"` of <layer id=\"{bad_id}\" name=\"y\" type=\"Result\""
            )],
        );
    }
    expect_error(
        &info(base.replace("layer id=\"1\" ", "layer ").as_bytes(), None),
        1,
        &["<layer name=\"y\" type=\"Result\" version=\"opset1\"> has no `id` attribute"],
    );
    expect_error(
        &info(base.replace(" to-port=\"0\"", "").as_bytes(), None),
        1,
        &["<edge> has no `to-port` attribute"],
    );
    expect_error(
        &info(
            base.replace(
                "<port id=\"0\" precision=\"FP32\">",
                "<port precision=\"FP32\">",
            )
            .as_bytes(),
            None,
        ),
        1,
        &["<port> has no `id` attribute"],
    );
}

#[test]
fn graph_structure_errors_name_line_and_layer() {
    let dup = ir(
        &[
            parameter(0, "x", "f32", "2", "FP32", &[2]),
            result(0, "y", "FP32", &[2]),
        ],
        &[edge(0, 0, 0, 0)],
    );
    expect_error(
        &info(dup.as_bytes(), None),
        1,
        &["E0205", "layer id 0 is used twice", "model.xml:"],
    );
    let dangling = ir(
        &[
            parameter(0, "x", "f32", "2", "FP32", &[2]),
            result(1, "y", "FP32", &[2]),
        ],
        &[edge(0, 0, 1, 0), edge(5, 0, 1, 0)],
    );
    expect_error(
        &info(dangling.as_bytes(), None),
        1,
        &["E0301", "names layer 5, which does not exist"],
    );
    let bad_port = ir(
        &[
            parameter(0, "x", "f32", "2", "FP32", &[2]),
            result(1, "y", "FP32", &[2]),
        ],
        &[edge(0, 3, 1, 0)],
    );
    expect_error(
        &info(bad_port.as_bytes(), None),
        1,
        &["starts at port 3 of layer 0, which has no such output port"],
    );
    let twice = ir(
        &[
            parameter(0, "x", "f32", "2", "FP32", &[2]),
            parameter(2, "z", "f32", "2", "FP32", &[2]),
            result(1, "y", "FP32", &[2]),
        ],
        &[edge(0, 0, 1, 0), edge(2, 0, 1, 0)],
    );
    expect_error(
        &info(twice.as_bytes(), None),
        1,
        &["E0302", "two edges feed input port 0 of layer 1"],
    );
    let cycle = ir(
        &[
            layer(
                1,
                "a",
                "Relu",
                "opset1",
                None,
                &[port(0, "FP32", &[2])],
                &[port(1, "FP32", &[2])],
            ),
            layer(
                2,
                "b",
                "Relu",
                "opset1",
                None,
                &[port(0, "FP32", &[2])],
                &[port(1, "FP32", &[2])],
            ),
            result(3, "y", "FP32", &[2]),
        ],
        &[edge(1, 1, 2, 0), edge(2, 1, 1, 0), edge(2, 1, 3, 0)],
    );
    expect_error(
        &info(cycle.as_bytes(), None),
        1,
        &["E0303", "cycle through layers"],
    );
    let no_result = ir(&[parameter(0, "x", "f32", "2", "FP32", &[2])], &[]);
    expect_error(
        &info(no_result.as_bytes(), None),
        1,
        &["E0304", "no Result"],
    );
}

// ---- weights ----

#[test]
fn const_references_outside_or_inconsistent_with_the_bin() {
    let cases: &[(&str, &[i64], &[&str])] = &[
        (
            "element_type=\"f32\" shape=\"2\" offset=\"4\" size=\"8\"",
            &[2],
            &[
                "E0204",
                "bytes 4..12 (offset 4 + size 8) are past the end of",
                "(8 bytes)",
            ],
        ),
        (
            "element_type=\"f32\" shape=\"2\" offset=\"0\" size=\"4\"",
            &[2],
            &["size 4 is too small for shape [2] of f32: 8 bytes needed"],
        ),
        (
            "element_type=\"f32\" shape=\"2\" offset=\"18446744073709551615\" size=\"8\"",
            &[2],
            &["offset 18446744073709551615 + size 8 overflows"],
        ),
        (
            "element_type=\"f32\" shape=\"4294967296,4294967296,16\" offset=\"0\" size=\"8\"",
            &[1],
            &["element count of shape", "overflows"],
        ),
        (
            "element_type=\"f32\" shape=\"2,-1\" offset=\"0\" size=\"8\"",
            &[2],
            &["Const shape \"2,-1\"", "not a non-negative integer"],
        ),
        (
            "element_type=\"float\" shape=\"2\" offset=\"0\" size=\"8\"",
            &[2],
            &[
                "E0203",
                "Const element_type \"float\" is not an element type",
            ],
        ),
        (
            "element_type=\"f32\" shape=\"2\" offset=\"-4\" size=\"8\"",
            &[2],
            &["Const offset \"-4\" is not an unsigned integer"],
        ),
        (
            "element_type=\"f32\" shape=\"2\"",
            &[2],
            &["Const <data> lacks offset, size"],
        ),
        (
            "element_type=\"u1\" shape=\"65\" offset=\"0\" size=\"8\"",
            &[65],
            &["size 8 is too small for shape [65] of u1: 9 bytes needed"],
        ),
        (
            "element_type=\"string\" shape=\"3\" offset=\"0\" size=\"8\"",
            &[3],
            &["size 8 is too small for shape [3] of string: 20 bytes needed"],
        ),
    ];
    for (data, dims, needles) in cases {
        let o = info(const_model(data, dims).as_bytes(), Some(&[0u8; 8]));
        let mut all = vec!["layer 0 \"c\" (Const-opset1)"];
        all.extend_from_slice(needles);
        expect_error(&o, 1, &all);
    }
}

#[test]
fn missing_or_special_weights_files() {
    let o = info(
        const_model(
            "element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\"",
            &[],
        )
        .as_bytes(),
        None,
    );
    expect_error(
        &o,
        1,
        &[
            "E0204",
            "the Const needs 4 bytes of weights but cannot open",
        ],
    );
    let d = scratch_dir("malformed");
    std::fs::write(
        d.join("m.xml"),
        const_model(
            "element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\"",
            &[],
        ),
    )
    .unwrap();
    let o = irun(&[
        "info",
        d.join("m.xml").to_str().unwrap(),
        "--weights",
        "/dev/zero",
    ]);
    expect_error(&o, 1, &["is not a regular file"]);
}

#[test]
fn const_must_be_spelled_const() {
    let xml = const_model(
        "element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\"",
        &[],
    )
    .replace("type=\"Const\"", "type=\"Constant\"");
    expect_error(
        &info(xml.as_bytes(), Some(&[0; 4])),
        1,
        &["E0307", "layer type \"Constant\" must be spelled \"Const\""],
    );
}

#[test]
fn valid_model_prints_info_and_exits_0() {
    let o = info(
        const_model(
            "element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\"",
            &[],
        )
        .as_bytes(),
        Some(&[0; 4]),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("1  Const-opset1"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("constants: 1 (4 bytes); weights file: 4 bytes"),
        "{}",
        o.stdout
    );
}

#[test]
fn random_byte_flips_never_crash_the_reader() {
    // A cheap mutation fuzz over a real OpenVINO-written file: every single-byte corruption must
    // end in a clean exit code. (Deterministic: positions and bytes come from a fixed LCG.)
    let root =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("models/reader/forms_v11");
    let xml = std::fs::read(root.join("model.xml")).unwrap();
    let bin = std::fs::read(root.join("model.bin")).unwrap();
    let mut state: u64 = 0x2545F4914F6CDD1D;
    for _ in 0..60 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = (state >> 33) as usize % xml.len();
        let byte = (state >> 17) as u8;
        let mut m = xml.clone();
        m[at] = byte;
        let o = info(&m, Some(&bin));
        assert!(
            matches!(o.code, 0 | 1),
            "flip at {at} to {byte:#x}: exit {} {}",
            o.code,
            o.stderr
        );
    }
}
