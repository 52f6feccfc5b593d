//! Loop, TensorIterator and If: bodies read, checked and inferred through their port maps.

use irun_ops::codes;
use irun_tensor::ElementType;

use crate::control_flow::{Joined, OutputMap, ParamSource};
use crate::testing::*;
use crate::tests::build;
use crate::Graph;

/// Messages of the errors, rendered with their paths.
fn errors(g: &Graph) -> Vec<String> {
    g.errors().map(|d| d.render("t.xml")).collect()
}

/// The body of the test Loop: acc (back-edged) + the slice xs; the condition is the outer
/// `go` passed through; the current iteration is unused.
fn loop_body(add_dims: &[i64]) -> String {
    let layers = [
        parameter(0, "i", "i64", "1", "I64", &[1]),
        parameter(1, "acc", "f32", "1,3", "FP32", &[1, 3]),
        parameter(2, "xs", "f32", "1,3", "FP32", &[1, 3]),
        parameter(3, "c", "boolean", "", "BOOL", &[]),
        layer(
            4,
            "add",
            "Add",
            "opset1",
            None,
            &[port(0, "FP32", &[1, 3]), port(1, "FP32", &[1, 3])],
            &[port(2, "FP32", add_dims)],
        ),
        result(5, "acc_out", "FP32", &[1, 3]),
        result(6, "cond_out", "BOOL", &[]),
    ];
    let edges = [
        edge(1, 0, 4, 0),
        edge(2, 0, 4, 1),
        edge(4, 2, 5, 0),
        edge(3, 0, 6, 0),
    ];
    format!(
        "<body><layers>{}</layers><edges>{}</edges></body>",
        layers.concat(),
        edges.concat()
    )
}

const LOOP_MAP: &str = r#"<port_map>
<input external_port_id="2" internal_layer_id="2" axis="0" start="0" end="-1" stride="1" part_size="1"/>
<input external_port_id="3" internal_layer_id="1"/>
<input external_port_id="1" internal_layer_id="3"/>
<input external_port_id="-1" internal_layer_id="0" purpose="current_iteration"/>
<output external_port_id="5" internal_layer_id="5"/>
<output external_port_id="6" internal_layer_id="5" axis="0" start="0" end="-1" stride="1" part_size="1"/>
<output external_port_id="-1" internal_layer_id="6" purpose="execution_condition"/>
</port_map>
<back_edges><edge from-layer="5" to-layer="1"/></back_edges>"#;

/// trip, go, x [4,3], a [1,3] -> Loop -> (last [1,3], joined [?,3]).
fn loop_model(kind: &str, version: &str, port_map: &str, body: &str) -> String {
    let ports_in = [
        port(0, "I64", &[]),
        port(1, "BOOL", &[]),
        port(2, "FP32", &[4, 3]),
        port(3, "FP32", &[1, 3]),
    ];
    let ports_out = [port(4, "FP32", &[1, 3]), port(5, "FP32", &[-1, 3])];
    let the_loop = format!(
        "<layer id=\"4\" name=\"loop\" type=\"{kind}\" version=\"{version}\">{port_map}<input>{}</input><output>{}</output>{body}</layer>\n",
        ports_in.concat(),
        ports_out.concat()
    );
    ir(
        &[
            parameter(0, "trip", "i64", "", "I64", &[]),
            parameter(1, "go", "boolean", "", "BOOL", &[]),
            parameter(2, "x", "f32", "4,3", "FP32", &[4, 3]),
            parameter(3, "a", "f32", "1,3", "FP32", &[1, 3]),
            the_loop,
            result(5, "last", "FP32", &[1, 3]),
            result(6, "joined", "FP32", &[-1, 3]),
        ],
        &[
            edge(0, 0, 4, 0),
            edge(1, 0, 4, 1),
            edge(2, 0, 4, 2),
            edge(3, 0, 4, 3),
            edge(4, 4, 5, 0),
            edge(4, 5, 6, 0),
        ],
    )
}

#[test]
fn a_loop_resolves_its_port_map_and_infers_through_its_body() {
    let g = build(&loop_model("Loop", "opset5", LOOP_MAP, &loop_body(&[1, 3])));
    assert_eq!(errors(&g), Vec::<String>::new());
    // The body does not read its current-iteration Parameter: normal in a body, no note.
    assert_eq!(g.all_diagnostics().count(), 0, "{:?}", g.diagnostics);
    let flow = g.flows[4].as_ref().expect("a control-flow node");
    let body = &flow.bodies[0];
    assert_eq!(
        body.params,
        vec![
            ParamSource::CurrentIteration,
            ParamSource::Merged {
                input: 3,
                result: 0
            },
            ParamSource::Sliced {
                input: 2,
                axis: 0,
                reverse: false
            },
            ParamSource::Invariant { input: 1 },
        ]
    );
    assert_eq!(
        body.outputs,
        vec![
            OutputMap {
                result: 0,
                concat: None
            },
            OutputMap {
                result: 0,
                concat: Some(Joined {
                    axis: 0,
                    reverse: false
                })
            },
        ]
    );
    assert_eq!(body.condition, Some(1));
    // The trip count is an input, so the number of iterations is unknown.
    assert_eq!(g.facts[4][0].to_string(), "f32 [1,3]");
    assert_eq!(g.facts[4][1].to_string(), "f32 [?,3]");
}

#[test]
fn a_body_error_names_the_path_to_it() {
    let g = build(&loop_model("Loop", "opset5", LOOP_MAP, &loop_body(&[2, 3])));
    let errs = errors(&g);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "error[E0505]: output port 2 declares shape [2,3], but Add-1 infers f32 [1,3]"
        ),
        "{}",
        errs[0]
    );
    assert!(errs[0].contains("   = in: layer 4 \"loop\" (Loop-opset5) <body>\n   = layer: layer 4 \"add\" (Add-opset1)"), "{}", errs[0]);
    let d = g.all_diagnostics().find(|d| d.is_error()).unwrap();
    assert_eq!(d.inside.len(), 1);
    assert_eq!(d.inside[0].body, "body");
}

#[test]
fn port_map_entries_that_name_nothing_are_errors() {
    let cases = [
        (
            LOOP_MAP.replace(
                r#"external_port_id="3" internal_layer_id="1""#,
                r#"external_port_id="3" internal_layer_id="4""#,
            ),
            "port map input names internal_layer_id 4, which is not a Parameter of <body>",
        ),
        (
            LOOP_MAP.replace(
                r#"external_port_id="1" internal_layer_id="3""#,
                r#"external_port_id="9" internal_layer_id="3""#,
            ),
            "port map input names external_port_id 9, but the layer has 4 input(s)",
        ),
        (
            LOOP_MAP.replace(
                r#"<output external_port_id="5" internal_layer_id="5"/>"#,
                "",
            ),
            "the port map of <body> gives 1 output(s), but the layer has 2",
        ),
        (
            LOOP_MAP.replace(r#"to-layer="1""#, r#"to-layer="2""#),
            "back edge to body Parameter 2, which has no outer input for its first iteration",
        ),
        (
            LOOP_MAP.replace(r#"external_port_id="1" internal_layer_id="3"/>"#, "/>"),
            "", // the entry lost its internal_layer_id: a reader error
        ),
        (
            LOOP_MAP.replace(
                r#"axis="0" start="0" end="-1" stride="1" part_size="1"/>
<input external_port_id="3""#,
                r#"axis="0" stride="2"/>
<input external_port_id="3""#,
            ),
            "sliced input (axis 0, start 0, end -1, stride 2, part_size 1) is not supported",
        ),
    ];
    for (map, want) in cases {
        let g = build(&loop_model("Loop", "opset5", &map, &loop_body(&[1, 3])));
        let errs = errors(&g);
        assert!(!errs.is_empty(), "no error for {want}");
        assert!(
            errs.iter().any(|e| e.contains(want) && e.contains("E0201")),
            "{want}: {errs:?}"
        );
    }
}

#[test]
fn a_body_without_its_port_map_and_a_loop_in_an_early_opset_are_errors() {
    let g = build(&loop_model("Loop", "opset5", "", &loop_body(&[1, 3])));
    assert!(errors(&g)
        .iter()
        .any(|e| e.contains("<body> has no <port_map> to tie it to the layer's ports")));
    let g = build(&loop_model("Loop", "opset4", LOOP_MAP, &loop_body(&[1, 3])));
    let d = g.all_diagnostics().find(|d| d.is_error()).unwrap();
    assert_eq!(d.code, codes::UNKNOWN_OPSET);
    assert_eq!(
        d.message,
        "Loop does not exist in opset4; it was introduced in opset5"
    );
}

#[test]
fn outer_inputs_must_fit_the_body_parameters_they_feed() {
    // A body computing in i32 throughout, fed f32 from outside.
    let body = loop_body(&[1, 3])
        .replace(r#"element_type="f32""#, r#"element_type="i32""#)
        .replace("FP32", "I32");
    let g = build(&loop_model("Loop", "opset5", LOOP_MAP, &body));
    let d = g
        .all_diagnostics()
        .find(|d| d.code == codes::ELEMENT_TYPE)
        .expect("a type error");
    assert!(
        d.message
            .contains("Loop-5: input 3 is f32, but it feeds body Parameter \"acc\", declared i32"),
        "{}",
        d.message
    );
}

#[test]
fn a_tensor_iterator_knows_its_iterations_from_the_slices() {
    // No trip count or condition: ports 0 and 1 are plain invariant inputs here.
    let map = LOOP_MAP
        .replace(
            r#"<input external_port_id="-1" internal_layer_id="0" purpose="current_iteration"/>"#,
            r#"<input external_port_id="0" internal_layer_id="0"/>"#,
        )
        .replace(
            r#"<output external_port_id="-1" internal_layer_id="6" purpose="execution_condition"/>"#,
            "",
        );
    // Input 0 (a scalar here) feeds the body's first Parameter, now a scalar too.
    let body = loop_body(&[1, 3])
        .replace(
            r#"shape="1" element_type="i64""#,
            r#"shape="" element_type="i64""#,
        )
        .replace(r#"names="i"><dim>1</dim>"#, r#"names="i">"#);
    let g = build(&loop_model("TensorIterator", "opset1", &map, &body));
    assert_eq!(errors(&g), Vec::<String>::new());
    assert_eq!(g.facts[4][1].to_string(), "f32 [4,3]");
    assert_eq!(g.facts[4][1].ty, ElementType::F32);
}

#[test]
fn an_if_on_an_unknown_condition_gives_what_both_branches_allow() {
    let branch = |role: &str, dims: &[i64], shape: &str| {
        let layers = [
            parameter(0, "p", "f32", shape, "FP32", dims),
            layer(
                1,
                "relu",
                "ReLU",
                "opset1",
                None,
                &[port(0, "FP32", dims)],
                &[port(1, "FP32", dims)],
            ),
            result(2, "r", "FP32", dims),
        ];
        format!(
            "<{role}_port_map><input external_port_id=\"{}\" internal_layer_id=\"0\"/><output external_port_id=\"3\" internal_layer_id=\"2\"/></{role}_port_map><{role}_body><layers>{}</layers><edges>{}{}</edges></{role}_body>",
            if role == "then" { 1 } else { 2 },
            layers.concat(),
            edge(0, 0, 1, 0),
            edge(1, 1, 2, 0)
        )
    };
    let the_if = format!(
        "<layer id=\"3\" name=\"if\" type=\"If\" version=\"opset8\">{}{}<input>{}{}{}</input><output>{}</output></layer>\n",
        branch("then", &[2, 3], "2,3"),
        branch("else", &[2, 5], "2,5"),
        port(0, "BOOL", &[]),
        port(1, "FP32", &[2, 3]),
        port(2, "FP32", &[2, 5]),
        port(3, "FP32", &[2, -1]),
    );
    let xml = ir(
        &[
            parameter(0, "c", "boolean", "", "BOOL", &[]),
            parameter(1, "a", "f32", "2,3", "FP32", &[2, 3]),
            parameter(2, "b", "f32", "2,5", "FP32", &[2, 5]),
            the_if,
            result(4, "y", "FP32", &[2, -1]),
        ],
        &[
            edge(0, 0, 3, 0),
            edge(1, 0, 3, 1),
            edge(2, 0, 3, 2),
            edge(3, 3, 4, 0),
        ],
    );
    let g = build(&xml);
    assert_eq!(errors(&g), Vec::<String>::new());
    assert_eq!(g.facts[3][0].to_string(), "f32 [2,3..5]");
}

#[test]
fn a_body_on_another_layer_type_is_a_warning() {
    let xml = loop_model("Loop", "opset5", LOOP_MAP, &loop_body(&[1, 3])).replace(
        r#"<layer id="5" name="last" type="Result" version="opset1">"#,
        &format!(
            r#"<layer id="5" name="last" type="Result" version="opset1">{}"#,
            loop_body(&[1, 3])
        ),
    );
    let g = build(&xml);
    let d = g
        .all_diagnostics()
        .find(|d| d.code == irun_ir::codes::UNKNOWN_ELEMENT)
        .expect("a warning");
    assert_eq!(
        d.message,
        "<body> is ignored: only Loop, TensorIterator and If have bodies, not Result"
    );
}
