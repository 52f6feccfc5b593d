//! A control-flow layer's port map resolved against its bodies: each body built as a graph,
//! each entry checked against both sides, every problem a diagnostic on the layer.

use std::collections::HashMap;
use std::sync::Arc;

use irun_ir::{codes as ir_codes, BodyRef, Diagnostic, IrModel, Layer, PortMapEntry};

use super::{Body, ControlFlow, FlowKind, Joined, OutputMap, ParamSource};
use crate::graph::{Graph, NodeId};

/// Builds the control flow of `layer` (node `n` of `model`): its bodies as graphs, its port
/// maps checked against both sides. Problems are diagnostics; `None` when the layer cannot be
/// used.
pub(crate) fn build(
    model: &IrModel,
    layer: &Layer,
    kind: FlowKind,
    diags: &mut Vec<Diagnostic>,
) -> Option<ControlFlow> {
    let mut b = Builder {
        layer,
        kind,
        diags,
        ok: true,
    };
    let mut bodies = Vec::new();
    for &role in kind.bodies() {
        let found: Vec<&irun_ir::Body> = layer.bodies.iter().filter(|b| b.role == role).collect();
        match found[..] {
            [body] => bodies.push(b.body(model, body)),
            [] => b.error(layer.pos, format!("{} has no <{role}>", kind.name())),
            [_, second, ..] => b.error(second.pos, format!("a second <{role}>")),
        }
    }
    for other in layer
        .bodies
        .iter()
        .filter(|x| !kind.bodies().contains(&&*x.role))
    {
        b.error(
            other.pos,
            format!(
                "{} has no <{}> (it takes {})",
                kind.name(),
                other.role,
                kind.bodies()
                    .iter()
                    .map(|r| format!("<{r}>"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        );
    }
    let bodies: Option<Vec<Body>> = bodies.into_iter().collect();
    bodies
        .filter(|_| b.ok)
        .map(|bodies| ControlFlow { kind, bodies })
}

struct Builder<'a> {
    layer: &'a Layer,
    kind: FlowKind,
    diags: &'a mut Vec<Diagnostic>,
    ok: bool,
}

impl Builder<'_> {
    fn error(&mut self, pos: irun_ir::Pos, message: String) {
        self.ok = false;
        self.diags.push(
            Diagnostic::error(ir_codes::BAD_ATTRIBUTE, message)
                .at(pos)
                .on_layer(self.layer.layer_ref()),
        );
    }

    fn body(&mut self, model: &IrModel, body: &irun_ir::Body) -> Option<Body> {
        let net = IrModel {
            xml_path: model.xml_path.clone(),
            version: model.version,
            name: None,
            layers: body.layers.clone(),
            edges: body.edges.clone(),
            rt_info: Vec::new(),
            weights: model.weights.clone(),
            diagnostics: Vec::new(),
        };
        let graph = Graph::build_body(net);
        let at = BodyRef {
            layer: self.layer.layer_ref(),
            body: body.role.clone(),
        };
        let body_ok = !graph.has_errors();
        self.diags.extend(
            graph
                .diagnostics
                .iter()
                .map(|d| d.clone().inside_body(at.clone())),
        );
        if !graph.variables.is_empty() {
            self.error(
                body.pos,
                format!(
                    "<{}> reads or writes state variables; irun runs state only in the main graph",
                    body.role
                ),
            );
        }
        let nodes: HashMap<u64, NodeId> = graph
            .model
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| (l.id, i))
            .collect();
        let param_of = |id: u64| {
            nodes
                .get(&id)
                .and_then(|n| graph.parameters.iter().position(|p| p == n))
        };
        let result_of = |id: u64| {
            nodes
                .get(&id)
                .and_then(|n| graph.results.iter().position(|r| r == n))
        };
        let at_map = body.port_map_pos.unwrap_or(body.pos);
        let mut params: Vec<Option<ParamSource>> = vec![None; graph.parameters.len()];
        for e in &body.inputs {
            let Some(p) = param_of(e.internal_layer_id) else {
                self.error(
                    e.pos,
                    format!(
                        "port map input names internal_layer_id {}, which is not a Parameter of <{}>",
                        e.internal_layer_id, body.role
                    ),
                );
                continue;
            };
            let source = self.input_source(e, body, &result_of);
            if let Some(source) = source {
                if params[p].is_some() {
                    self.error(
                        e.pos,
                        format!(
                            "body Parameter {} is mapped twice in the port map",
                            e.internal_layer_id
                        ),
                    );
                }
                params[p] = Some(source);
            }
        }
        for be in &body.back_edges {
            if result_of(be.from_layer).is_none() {
                self.error(
                    be.pos,
                    format!(
                        "back edge from layer {}, which is not a Result of the body",
                        be.from_layer
                    ),
                );
            }
            let target = param_of(be.to_layer);
            match target.map(|p| params[p]) {
                None => self.error(
                    be.pos,
                    format!("back edge to layer {}, which is not a Parameter of the body", be.to_layer),
                ),
                Some(Some(ParamSource::Merged { .. })) => {}
                Some(_) => self.error(
                    be.pos,
                    format!(
                        "back edge to body Parameter {}, which has no outer input for its first iteration (the port map must give it an <input> with an external_port_id)",
                        be.to_layer
                    ),
                ),
            }
        }
        let unmapped: Vec<String> = params
            .iter()
            .zip(&graph.parameters)
            .filter(|(s, _)| s.is_none())
            .map(|(_, &n)| {
                format!(
                    "{} \"{}\"",
                    graph.model.layers[n].id, graph.model.layers[n].name
                )
            })
            .collect();
        if !unmapped.is_empty() && body_ok {
            self.error(
                at_map,
                format!(
                    "body Parameter(s) {} of <{}> get no value: no port map <input> names them",
                    unmapped.join(", "),
                    body.role
                ),
            );
        }
        let (outputs, condition) = self.outputs(body, &result_of, at_map);
        let params: Option<Vec<ParamSource>> = params.into_iter().collect();
        let graph = Arc::new(graph);
        Some(Body {
            role: body.role.clone(),
            graph,
            params: params?,
            outputs: outputs?,
            condition,
        })
        .filter(|_| body_ok)
    }

    /// What a port map `<input>` entry makes of its Parameter.
    fn input_source(
        &mut self,
        e: &PortMapEntry,
        body: &irun_ir::Body,
        result_of: &dyn Fn(u64) -> Option<usize>,
    ) -> Option<ParamSource> {
        let current = e.purpose.as_deref() == Some("current_iteration");
        if current || e.external_port_id < 0 {
            if self.kind == FlowKind::Loop && (current || e.external_port_id == -1) {
                return Some(ParamSource::CurrentIteration);
            }
            self.error(
                e.pos,
                format!(
                    "port map input with external_port_id {} feeds no outer input into body Parameter {}",
                    e.external_port_id, e.internal_layer_id
                ),
            );
            return None;
        }
        let inputs = self.layer.inputs.len();
        let input = usize::try_from(e.external_port_id).unwrap_or(usize::MAX);
        if input >= inputs {
            self.error(
                e.pos,
                format!(
                    "port map input names external_port_id {}, but the layer has {inputs} input(s)",
                    e.external_port_id
                ),
            );
            return None;
        }
        if let Some(axis) = e.axis {
            return self.sliced(e, input, axis);
        }
        let back = body
            .back_edges
            .iter()
            .find(|be| be.to_layer == e.internal_layer_id);
        match back.map(|be| result_of(be.from_layer)) {
            Some(Some(result)) => Some(ParamSource::Merged { input, result }),
            Some(None) => None, // reported with the back edges
            None => Some(ParamSource::Invariant { input }),
        }
    }

    /// A sliced input: iteration `i` reads slice `i` along `axis` (slice `d-1-i` with a
    /// negative stride). Only whole-axis slicing one element at a time is supported: the
    /// forms OpenVINO's converters write (Loop's reference kernel ignores start and end).
    fn sliced(&mut self, e: &PortMapEntry, input: usize, axis: i64) -> Option<ParamSource> {
        if self.kind == FlowKind::If {
            self.error(
                e.pos,
                "If does not slice its inputs: a port map <input> of an If has no `axis`".into(),
            );
            return None;
        }
        let reverse = e.stride < 0;
        let whole_axis = match self.kind {
            FlowKind::TensorIterator => {
                (e.start, e.end) == (0, -1) && !reverse || (e.start, e.end) == (-1, 0) && reverse
            }
            _ => true,
        };
        if axis < 0 || e.stride.abs() != 1 || e.part_size != 1 || !whole_axis {
            self.error(
                e.pos,
                format!(
                    "sliced input (axis {axis}, start {}, end {}, stride {}, part_size {}) is not supported: irun slices a non-negative axis whole, one element per iteration (start 0, end -1, stride 1, or start -1, end 0, stride -1)",
                    e.start, e.end, e.stride, e.part_size
                ),
            );
            return None;
        }
        Some(ParamSource::Sliced {
            input,
            axis: axis as usize,
            reverse,
        })
    }

    /// The layer's outputs from the port map's `<output>` entries: those with a non-negative
    /// external_port_id, in its order, one per output; and Loop's condition Result.
    fn outputs(
        &mut self,
        body: &irun_ir::Body,
        result_of: &dyn Fn(u64) -> Option<usize>,
        at_map: irun_ir::Pos,
    ) -> (Option<Vec<OutputMap>>, Option<usize>) {
        let mut condition = None;
        let mut mapped: Vec<(i64, OutputMap, irun_ir::Pos)> = Vec::new();
        let mut ok = true;
        for e in &body.outputs {
            let Some(result) = result_of(e.internal_layer_id) else {
                self.error(
                    e.pos,
                    format!(
                        "port map output names internal_layer_id {}, which is not a Result of <{}>",
                        e.internal_layer_id, body.role
                    ),
                );
                ok = false;
                continue;
            };
            if e.purpose.as_deref() == Some("execution_condition") {
                if self.kind != FlowKind::Loop {
                    self.error(
                        e.pos,
                        format!(
                            "only Loop has an execution condition, not {}",
                            self.kind.name()
                        ),
                    );
                    ok = false;
                }
                condition = Some(result);
                continue;
            }
            if e.external_port_id < 0 {
                continue;
            }
            let concat = match e.axis {
                None => None,
                Some(_) if self.kind == FlowKind::If => {
                    self.error(
                        e.pos,
                        "If does not join iterations: a port map <output> of an If has no `axis`"
                            .into(),
                    );
                    ok = false;
                    None
                }
                Some(axis) if axis < 0 || e.stride.abs() != 1 || e.part_size != 1 => {
                    self.error(
                        e.pos,
                        format!(
                            "concatenated output (axis {axis}, stride {}, part_size {}) is not supported: irun joins along a non-negative axis, one iteration after another (stride 1 or -1, part_size 1)",
                            e.stride, e.part_size
                        ),
                    );
                    ok = false;
                    None
                }
                Some(axis) => Some(Joined {
                    axis: axis as usize,
                    reverse: e.stride < 0,
                }),
            };
            mapped.push((e.external_port_id, OutputMap { result, concat }, e.pos));
        }
        mapped.sort_by_key(|(id, ..)| *id);
        for pair in mapped.windows(2) {
            if pair[0].0 == pair[1].0 {
                self.error(
                    pair[1].2,
                    format!("two port map outputs have external_port_id {}", pair[1].0),
                );
                ok = false;
            }
        }
        let want = self.layer.outputs.len();
        if mapped.len() != want {
            self.error(
                at_map,
                format!(
                    "the port map of <{}> gives {} output(s), but the layer has {want}",
                    body.role,
                    mapped.len()
                ),
            );
            ok = false;
        }
        let outputs = ok.then(|| mapped.into_iter().map(|(_, m, _)| m).collect());
        (outputs, condition)
    }
}
