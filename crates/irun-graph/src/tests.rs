use std::path::Path;

use irun_ir::{codes, IrModel, Weights};

use irun_ops::Fact;
use irun_tensor::{ElementType, PartialShape};

use crate::testing::*;
use crate::Graph;

pub(crate) fn build(xml: &str) -> Graph {
    Graph::build(
        IrModel::parse(xml, Path::new("t.xml"), Weights::empty(Path::new("t.bin")))
            .expect("well-formed"),
    )
}

/// [`build`] with `bytes` as the `.bin`.
fn build_with_weights(xml: &str, bytes: Vec<u8>) -> Graph {
    Graph::build(
        IrModel::parse(
            xml,
            Path::new("t.xml"),
            Weights::from_vec(Path::new("t.bin"), bytes),
        )
        .expect("well-formed"),
    )
}

fn codes_of(g: &Graph) -> Vec<&'static str> {
    g.all_diagnostics().map(|d| d.code).collect()
}

/// Parameter(0) -> Relu(1) -> Result(2), plus `extra_layers`/`extra_edges`.
fn chain(extra_layers: &[String], extra_edges: &[String]) -> String {
    let mut layers = vec![
        parameter(0, "x", "f32", "2", "FP32", &[2]),
        layer(
            1,
            "relu",
            "ReLU",
            "opset1",
            None,
            &[port(0, "FP32", &[2])],
            &[port(1, "FP32", &[2])],
        ),
        result(2, "y", "FP32", &[2]),
    ];
    layers.extend_from_slice(extra_layers);
    let mut edges = vec![edge(0, 0, 1, 0), edge(1, 1, 2, 0)];
    edges.extend_from_slice(extra_edges);
    ir(&layers, &edges)
}

#[test]
fn orders_producers_first_and_finds_inputs_and_outputs() {
    let g = build(&chain(&[], &[]));
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
    assert_eq!(g.order, vec![0, 1, 2]);
    assert_eq!(g.parameters, vec![0]);
    assert_eq!(g.results, vec![2]);
    assert_eq!(g.output_key(0), "output_0");
    assert_eq!(g.input_names(0), vec!["x"]);
}

#[test]
fn unreachable_layers_are_a_note() {
    let unused = layer(
        7,
        "unused",
        "Relu",
        "opset1",
        None,
        &[port(0, "FP32", &[2])],
        &[port(1, "FP32", &[2])],
    );
    let g = build(&chain(
        &[unused, parameter(8, "p_unused", "f32", "1", "FP32", &[1])],
        &[edge(0, 0, 7, 0)],
    ));
    assert!(!g.has_errors());
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == codes::UNREACHABLE)
        .unwrap();
    assert!(
        d.message.starts_with("1 layer(s)") && d.message.contains("7 \"unused\""),
        "{}",
        d.message
    );
    assert!(!g.order.contains(&3));
    // An unused Parameter is still a model input and is ordered, as in OpenVINO.
    assert_eq!(g.parameters, vec![0, 4]);
    assert!(g.order.contains(&4));
    // ... and a note says its values are ignored; `x`, which feeds layers, gets none.
    let unused_inputs: Vec<&str> = g
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::UNUSED_INPUT)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        unused_inputs,
        ["input \"p_unused\" feeds no layer: its values are ignored"]
    );
}

#[test]
fn cycles_are_errors_naming_the_layers() {
    let xml = ir(
        &[
            layer(
                1,
                "a",
                "Add",
                "opset1",
                None,
                &[port(0, "FP32", &[1]), port(1, "FP32", &[1])],
                &[port(2, "FP32", &[1])],
            ),
            layer(
                2,
                "b",
                "Relu",
                "opset1",
                None,
                &[port(0, "FP32", &[1])],
                &[port(1, "FP32", &[1])],
            ),
            parameter(0, "x", "f32", "1", "FP32", &[1]),
            result(3, "y", "FP32", &[1]),
        ],
        &[
            edge(0, 0, 1, 0),
            edge(2, 1, 1, 1),
            edge(1, 2, 2, 0),
            edge(2, 1, 3, 0),
        ],
    );
    let g = build(&xml);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == codes::CYCLE)
        .expect("cycle reported");
    assert!(d.message.contains("cycle through layers"), "{}", d.message);
    assert!(d.message.contains('1') && d.message.contains('2'));
}

#[test]
fn duplicate_ids_and_bad_edges() {
    let g = build(&chain(
        &[parameter(1, "dup", "f32", "1", "FP32", &[1])],
        &[edge(9, 0, 1, 0), edge(0, 0, 2, 5), edge(0, 0, 1, 0)],
    ));
    let c = codes_of(&g);
    assert!(c.contains(&codes::DUPLICATE_ID), "{c:?}");
    assert!(c.contains(&codes::DANGLING_EDGE), "{c:?}");
    assert!(c.contains(&codes::BAD_INPUT_WIRING), "{c:?}");
    let msgs: Vec<String> = g.diagnostics.iter().map(|d| d.message.clone()).collect();
    assert!(
        msgs.iter().any(|m| m.contains("layer id 1 is used twice")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("names layer 9, which does not exist")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.contains("has no such input port")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("two edges feed input port 0 of layer 1")),
        "{msgs:?}"
    );
}

#[test]
fn edge_direction_and_unfed_inputs() {
    let xml = chain(&[], &[edge(1, 0, 2, 0)]);
    let g = build(&xml);
    assert!(g
        .diagnostics
        .iter()
        .any(|d| d.code == codes::EDGE_DIRECTION && d.message.contains("which is an input port")));
    let xml = ir(
        &[
            parameter(0, "x", "f32", "1", "FP32", &[1]),
            result(2, "y", "FP32", &[1]),
        ],
        &[],
    );
    let g = build(&xml);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == codes::BAD_INPUT_WIRING)
        .unwrap();
    assert!(d
        .message
        .contains("input port 0 of layer 2 has no incoming edge"));
    assert_eq!(d.layer.as_ref().unwrap().name, "y");
}

#[test]
fn no_result_and_constant_spelling() {
    let g = build(&ir(&[parameter(0, "x", "f32", "1", "FP32", &[1])], &[]));
    assert!(codes_of(&g).contains(&codes::NO_RESULT));
    let xml = ir(
        &[
            layer(
                0,
                "c",
                "Constant",
                "opset1",
                Some("element_type=\"f32\" shape=\"\" offset=\"0\" size=\"4\""),
                &[],
                &[port(0, "FP32", &[])],
            ),
            result(1, "y", "FP32", &[]),
        ],
        &[edge(0, 0, 1, 0)],
    );
    let g = build(&xml);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == codes::BAD_TYPE_SPELLING)
        .unwrap();
    assert!(d.message.contains("must be spelled \"Const\""));
}

#[test]
fn output_names_follow_openvino() {
    let xml = ir(
        &[
            parameter(0, "x", "f32", "1", "FP32", &[1]),
            layer(
                1,
                "y",
                "Result",
                "opset1",
                None,
                &[port(0, "FP32", &[1])],
                &[],
            )
            .replace(
                "version=\"opset1\"",
                "version=\"opset1\" output_names=\"zzz,yyy\"",
            ),
        ],
        &[edge(0, 0, 1, 0)],
    );
    let g = build(&xml);
    assert_eq!(g.output_names(1), vec!["yyy", "zzz"]);
    assert_eq!(g.output_key(0), "yyy");
}

/// Parameter data [4] f32, Const indices i64 [2] = {0, 1}... as a SEU layer with given
/// type/version/data, fed by Parameters only (axis too), then a Result.
fn seu_model(ty: &str, version: &str, data: Option<&str>) -> String {
    ir(
        &[
            parameter(0, "data", "f32", "4", "FP32", &[4]),
            parameter(1, "indices", "i64", "2", "I64", &[2]),
            parameter(2, "updates", "f32", "2", "FP32", &[2]),
            parameter(3, "axis", "i64", "", "I64", &[]),
            layer(
                4,
                "seu",
                ty,
                version,
                data,
                &[
                    port(0, "FP32", &[4]),
                    port(1, "I64", &[2]),
                    port(2, "FP32", &[2]),
                    port(3, "I64", &[]),
                ],
                &[port(4, "FP32", &[4])],
            ),
            result(5, "out", "FP32", &[4]),
        ],
        &[
            edge(0, 0, 4, 0),
            edge(1, 0, 4, 1),
            edge(2, 0, 4, 2),
            edge(3, 0, 4, 3),
            edge(4, 4, 5, 0),
        ],
    )
}

#[test]
fn attributes_are_read_strictly() {
    let g = build(&seu_model(
        "ScatterElementsUpdate",
        "opset12",
        Some("reduction=\"avg\" use_init_val=\"true\""),
    ));
    let d = g.diagnostics.iter().find(|d| d.is_error()).expect("error");
    assert_eq!(d.code, irun_ops::codes::BAD_ATTRIBUTE);
    assert!(
        d.message
            .contains("`reduction=\"avg\"` is not one of none, sum, prod, min, max, mean"),
        "{}",
        d.message
    );
    assert_eq!(d.layer.as_ref().unwrap().name, "seu");
    let g = build(&seu_model(
        "ScatterElementsUpdate",
        "opset12",
        Some("reduction=\"MEAN\" use_init_val=\"yes\""),
    ));
    let d = g.diagnostics.iter().find(|d| d.is_error()).expect("error");
    assert!(
        d.message
            .contains("`use_init_val=\"yes\"` is not a boolean"),
        "{}",
        d.message
    );
    let g = build(&seu_model(
        "ScatterElementsUpdate",
        "opset12",
        Some("reduction=\"MEAN\" use_init_val=\"0\""),
    ));
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
}

/// `opset11` resolves to ScatterElementsUpdate-3, which has no attributes: OpenVINO silently
/// drops `reduction`; irun warns.
#[test]
fn opset_selects_the_version_and_unknown_attributes_warn() {
    let g = build(&seu_model(
        "ScatterElementsUpdate",
        "opset11",
        Some("reduction=\"sum\""),
    ));
    assert!(!g.has_errors());
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == irun_ops::codes::UNKNOWN_ATTRIBUTE)
        .expect("warning");
    assert_eq!(
        d.message,
        "ScatterElementsUpdate-3 has no attribute `reduction`; it is ignored"
    );
    assert_eq!(g.ops[4].as_ref().unwrap().name(), "ScatterElementsUpdate-3");
    let g = build(&seu_model(
        "scatterelementsupdate",
        "opset16",
        Some("reduction=\"sum\""),
    ));
    assert_eq!(
        g.ops[4].as_ref().unwrap().name(),
        "ScatterElementsUpdate-12"
    );
    let g = build(&seu_model("ScatterElementsUpdate", "opset17", None));
    let d = g.diagnostics.iter().find(|d| d.is_error()).expect("error");
    assert!(
        d.message.contains("version \"opset17\" is not an opset"),
        "{}",
        d.message
    );
    let g = build(&seu_model("ScatterNDUpdate", "opset3", None));
    let d = g.diagnostics.iter().find(|d| d.is_error()).expect("error");
    assert!(
        d.message
            .contains("ScatterNDUpdate does not exist in opset3; it was introduced in opset4"),
        "{}",
        d.message
    );
}

#[test]
fn unsupported_types_are_reported_once_with_every_layer() {
    let mut layers = vec![parameter(0, "x", "f32", "2", "FP32", &[2])];
    let mut edges = Vec::new();
    for i in 1..=3 {
        layers.push(layer(
            i,
            &format!("r{i}"),
            "CTCLoss",
            "opset4",
            None,
            &[port(0, "FP32", &[2])],
            &[port(1, "FP32", &[2])],
        ));
        edges.push(edge(i - 1, if i == 1 { 0 } else { 1 }, i, 0));
    }
    layers.push(result(9, "y", "FP32", &[5]));
    edges.push(edge(3, 1, 9, 0));
    let g = build(&ir(&layers, &edges));
    let unsupported: Vec<_> = g
        .diagnostics
        .iter()
        .filter(|d| d.code == irun_ops::codes::UNSUPPORTED_OP)
        .collect();
    assert_eq!(unsupported.len(), 1);
    assert!(
        unsupported[0]
            .message
            .contains("CTCLoss-opset4 yet; 3 layer(s) not checked")
            && unsupported[0].message.ends_with("1, 2, 3")
    );
    // Downstream of an unsupported op the facts are unknown, so the Result's [5] is accepted.
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
}

#[test]
fn declared_ports_are_compared_with_inferred_facts() {
    let xml = seu_model("ScatterElementsUpdate", "opset12", None).replace(
        "<port id=\"4\" precision=\"FP32\"><dim>4</dim>",
        "<port id=\"4\" precision=\"I32\"><dim>4</dim>",
    );
    let g = build(&xml);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == irun_ops::codes::DECLARED_OUTPUT)
        .expect("declared output error");
    assert_eq!(
        d.message,
        "output port 4 declares precision I32, but ScatterElementsUpdate-12 infers f32 [4]"
    );
    assert_eq!(d.port.as_ref().unwrap().port_id, Some(4));
    // Inputs are compared with the producer's inferred fact, not its declaration.
    assert!(!g
        .diagnostics
        .iter()
        .any(|d| d.code == irun_ops::codes::DECLARED_INPUT));
    let xml = seu_model("ScatterElementsUpdate", "opset12", None).replace("name=\"out\" type=\"Result\" version=\"opset1\">\n<input><port id=\"0\" precision=\"FP32\"><dim>4</dim>", "name=\"out\" type=\"Result\" version=\"opset1\">\n<input><port id=\"0\" precision=\"FP32\"><dim>5</dim>");
    let g = build(&xml);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.code == irun_ops::codes::DECLARED_INPUT)
        .expect("declared input error");
    assert_eq!(
        d.message,
        "input port 0 declares shape [5], but its producer (layer 4) outputs f32 [4]"
    );
    assert_eq!(d.layer.as_ref().unwrap().name, "out");
    let xml = seu_model("ScatterElementsUpdate", "opset12", None).replace(
        "<input><port id=\"0\" precision=\"FP32\"><dim>4</dim>",
        "<input><port id=\"0\" precision=\"FP32\"><dim>-1</dim>",
    );
    assert!(!build(&xml).has_errors(), "-1 accepts anything");
}

/// `x.view(x.size(0), -1)` as torch exports it: Reshape(x, Concat(Gather(ShapeOf(x), 0), -1)).
/// Constant folding evaluates the shape branch at inference time, so the Reshape gets a
/// static shape and the declared `[2,12]` is checked against it.
/// x (`x_dims`) -> Reshape to `[x.shape[0], -1]`, the target computed from ShapeOf(x) by
/// Gather and Concat (folded when x's shape is known), and its `.bin`.
fn flatten_by_shape_of(x_dims: &[i64], y_dims: &[i64]) -> (String, Vec<u8>) {
    let x_shape = x_dims
        .iter()
        .map(|d| {
            if *d < 0 {
                "?".to_string()
            } else {
                d.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    let konst = |id: u64, name: &str, offset: u64, shape: &str, dims: &[i64]| {
        layer(
            id,
            name,
            "Const",
            "opset1",
            Some(&format!(
                "element_type=\"i64\" shape=\"{shape}\" offset=\"{offset}\" size=\"{}\"",
                8 * dims.iter().product::<i64>().max(1)
            )),
            &[],
            &[port(0, "I64", dims)],
        )
    };
    let xml = ir(
        &[
            parameter(0, "x", "f32", &x_shape, "FP32", x_dims),
            layer(
                1,
                "shape",
                "ShapeOf",
                "opset3",
                Some("output_type=\"i64\""),
                &[port(0, "FP32", x_dims)],
                &[port(1, "I64", &[3])],
            ),
            konst(2, "first", 0, "1", &[1]),
            konst(3, "axis", 8, "", &[]),
            layer(
                4,
                "batch",
                "Gather",
                "opset8",
                Some("batch_dims=\"0\""),
                &[
                    port(0, "I64", &[3]),
                    port(1, "I64", &[1]),
                    port(2, "I64", &[]),
                ],
                &[port(3, "I64", &[1])],
            ),
            konst(5, "rest", 16, "1", &[1]),
            layer(
                6,
                "target",
                "Concat",
                "opset1",
                Some("axis=\"0\""),
                &[port(0, "I64", &[1]), port(1, "I64", &[1])],
                &[port(2, "I64", &[2])],
            ),
            layer(
                7,
                "view",
                "Reshape",
                "opset1",
                Some("special_zero=\"false\""),
                &[port(0, "FP32", x_dims), port(1, "I64", &[2])],
                &[port(2, "FP32", y_dims)],
            ),
            result(8, "y", "FP32", y_dims),
        ],
        &[
            edge(0, 0, 1, 0),
            edge(1, 1, 4, 0),
            edge(2, 0, 4, 1),
            edge(3, 0, 4, 2),
            edge(4, 3, 6, 0),
            edge(5, 0, 6, 1),
            edge(6, 2, 7, 1),
            edge(0, 0, 7, 0),
            edge(7, 2, 8, 0),
        ],
    );
    let bytes: Vec<u8> = [0i64, 0, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
    (xml, bytes)
}

#[test]
fn shape_subgraphs_fold_to_static_shapes() {
    let (xml, bytes) = flatten_by_shape_of(&[2, 3, 4], &[2, 12]);
    let g = build_with_weights(&xml, bytes);
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
    let target = g.facts[6][0].value.as_ref().expect("Concat folded");
    assert_eq!(target.to_i64_vec().unwrap(), vec![2, -1]);
    assert_eq!(g.facts[7][0].shape.to_string(), "[2,12]");
    assert!(
        g.facts[7][0].value.is_none(),
        "x is an input: Reshape is not folded"
    );

    // A wrong declaration is now caught: [2,12] declared as [2,11].
    let bad = xml.replace(
        "<dim>2</dim><dim>12</dim></port></output>",
        "<dim>2</dim><dim>11</dim></port></output>",
    );
    let bytes: Vec<u8> = [0i64, 0, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
    let g = build_with_weights(&bad, bytes);
    assert!(
        codes_of(&g).contains(&irun_ops::codes::DECLARED_OUTPUT),
        "{:?}",
        g.diagnostics
    );
}

/// Inference for new input shapes from an earlier one: a node whose producers' facts did
/// not change keeps its facts, and a change reaches every node downstream, through folded
/// values too (the Reshape's target is computed from ShapeOf(x)).
#[test]
fn inference_after_an_earlier_one_infers_what_the_inputs_reach() {
    let (xml, bytes) = flatten_by_shape_of(&[-1, 3, 4], &[-1, 12]);
    let g = build_with_weights(&xml, bytes);
    assert!(!g.has_errors(), "{:?}", g.diagnostics);
    let x = |batch: usize| vec![(0, Fact::of_static(ElementType::F32, &[batch, 3, 4]))];
    let first = g.infer_with_inputs(&x(2)).unwrap();
    assert_eq!(first[7][0].shape.to_string(), "[2,12]");
    let fresh = g.infer_with_inputs(&x(5)).unwrap();
    let after = g
        .infer_with_inputs_after(&x(5), Some((&x(2), &first)))
        .unwrap();
    assert_eq!(after, fresh);
    assert_eq!(after[7][0].shape.to_string(), "[5,12]");

    // Unchanged inputs: every node's facts are the earlier ones, which is seen by marking
    // them (a marked fact inferred again would lose its mark).
    let mut marked = fresh.clone();
    marked[7][0].shape = PartialShape::fixed(&[7, 7]);
    let again = g
        .infer_with_inputs_after(&x(5), Some((&x(5), &marked)))
        .unwrap();
    assert_eq!(again[7][0].shape.to_string(), "[7,7]");
    // An earlier inference of another graph is not used.
    let other = g
        .infer_with_inputs_after(&x(5), Some((&x(5), &marked[..3])))
        .unwrap();
    assert_eq!(other, fresh);

    // A node the earlier call was given facts for (as a ReadValue's stored value) is
    // inferred again when it is not given them now (the state was reset): its earlier facts
    // were not its inputs' consequence.
    let reshaped = (7, Fact::of_static(ElementType::F32, &[60]));
    let given: Vec<(usize, Fact)> = x(5).into_iter().chain([reshaped]).collect();
    let with_given = g.infer_with_inputs(&given).unwrap();
    assert_eq!(with_given[7][0].shape.to_string(), "[60]");
    let after_given = g
        .infer_with_inputs_after(&x(5), Some((&given, &with_given)))
        .unwrap();
    assert_eq!(after_given, fresh);
}

/// Parameter x f32[2] -> ReadValue-6 `var` (declared `ty`[2]) -> Result, plus an Assign of
/// variable `assigned` fed by `assign_from` (layer, port), and `extra` layers.
fn stateful(ty: &str, assigned: &str, assign_from: (u64, u64), extra: &[String]) -> String {
    let f32s = |id: u64| port(id, "FP32", &[2]);
    let precision = if ty == "f32" { "FP32" } else { "I32" };
    let mut layers = vec![
        parameter(0, "x", "f32", "2", "FP32", &[2]),
        layer(
            1,
            "read",
            "ReadValue",
            "opset6",
            Some(&format!(
                "variable_id=\"var\" variable_type=\"{ty}\" variable_shape=\"2\""
            )),
            &[],
            &[port(0, precision, &[2])],
        ),
        result(2, "y", precision, &[2]),
        layer(
            3,
            "write",
            "Assign",
            "opset6",
            Some(&format!("variable_id=\"{assigned}\"")),
            &[f32s(0)],
            &[f32s(1)],
        ),
    ];
    layers.extend_from_slice(extra);
    let edges = vec![edge(1, 0, 2, 0), edge(assign_from.0, assign_from.1, 3, 0)];
    ir(&layers, &edges)
}

#[test]
fn variables_pair_a_read_value_with_an_assign() {
    let g = build(&stateful("f32", "var", (0, 0), &[]));
    assert_eq!(codes_of(&g), Vec::<&str>::new());
    assert_eq!(
        g.variables,
        vec![crate::Variable {
            id: "var".into(),
            read: Some(1),
            write: Some(3),
        }]
    );
}

#[test]
fn variable_problems_are_reported_on_the_assign() {
    // The Assign stores f32 values in an i32 variable.
    let g = build(&stateful("i32", "var", (0, 0), &[]));
    let d = g
        .all_diagnostics()
        .find(|d| d.is_error())
        .expect("an error");
    assert_eq!(d.code, "E0501");
    assert!(d.message.contains("variable `var`"), "{}", d.message);
    assert_eq!(d.layer.as_ref().map(|l| l.id), Some(3));
    // An Assign whose variable no ReadValue reads: a warning, the store has no effect.
    let g = build(&stateful("f32", "other", (0, 0), &[]));
    assert_eq!(codes_of(&g), vec![codes::UNREAD_VARIABLE]);
    // Two Assigns of one variable.
    let second = layer(
        4,
        "write2",
        "Assign",
        "opset6",
        Some("variable_id=\"var\""),
        &[port(0, "FP32", &[2])],
        &[port(1, "FP32", &[2])],
    );
    let xml = stateful("f32", "var", (0, 0), &[second])
        .replace("</edges>", &format!("{}</edges>", edge(0, 0, 4, 0)));
    let g = build(&xml);
    assert_eq!(codes_of(&g), vec![codes::DUPLICATE_VARIABLE]);
}
