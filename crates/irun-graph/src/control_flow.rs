//! Loop-5, TensorIterator-1 and If-8: layers whose work is a body graph.
//!
//! Their bodies are graphs of their own, built (and checked) once like the model: every
//! diagnostic of a body carries the path to it. The port map becomes a [`ControlFlow`]: for
//! each body Parameter, where its value comes from in each iteration; for each output of the
//! layer, which body Result gives it and whether iterations are joined. The layer's op
//! ([`FlowOp`]) infers through the bodies; the executor runs them.

use std::collections::HashMap;
use std::sync::Arc;

use irun_ir::{codes as ir_codes, BodyRef, Diagnostic, IrModel, Layer, PortMapEntry};
use irun_ops::{codes, Fact, Op, OpError};
use irun_tensor::{Dim, ElementType, PartialShape};

use crate::graph::{Graph, NodeId};

/// Which of the three ops a layer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKind {
    Loop,
    TensorIterator,
    If,
}

impl FlowKind {
    /// The kind of a layer of one of the three types; `None` for any other type. A version
    /// before the op's first opset is an error.
    pub fn of(layer: &Layer) -> Option<Result<FlowKind, OpError>> {
        let t = &layer.type_name;
        let &(kind, _, since) = FlowKind::ALL
            .iter()
            .find(|(_, name, _)| t.eq_ignore_ascii_case(name))?;
        let opset = irun_ops::registry::parse_opset(&layer.version);
        Some(match opset {
            Some(n) if n >= since => Ok(kind),
            Some(n) => Err(OpError::new(
                codes::UNKNOWN_OPSET,
                format!("{t} does not exist in opset{n}; it was introduced in opset{since}"),
            )),
            None => Err(OpError::new(
                codes::UNKNOWN_OPSET,
                format!(
                    "version \"{}\" is not an opset (OpenVINO 2026.4 reads opset1 to opset{})",
                    layer.version,
                    irun_ops::registry::NEWEST_OPSET
                ),
            )),
        })
    }

    /// The three, each with the opset that introduced it (and its only version).
    pub const ALL: [(FlowKind, &'static str, u32); 3] = [
        (FlowKind::TensorIterator, "TensorIterator", 1),
        (FlowKind::Loop, "Loop", 5),
        (FlowKind::If, "If", 8),
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Loop => "Loop-5",
            FlowKind::TensorIterator => "TensorIterator-1",
            FlowKind::If => "If-8",
        }
    }

    fn bodies(self) -> &'static [&'static str] {
        match self {
            FlowKind::If => &["then_body", "else_body"],
            _ => &["body"],
        }
    }
}

/// Where a body Parameter's value comes from, iteration by iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSource {
    /// Loop's current-iteration Parameter: the iteration number, in its own type and shape.
    CurrentIteration,
    /// Slice `i` of outer input `input` along `axis` (counted from the end when `reverse`),
    /// with size 1 there.
    Sliced {
        input: usize,
        axis: usize,
        reverse: bool,
    },
    /// Outer input `input` in every iteration.
    Invariant { input: usize },
    /// Outer input `input` in the first iteration, body Result `result` of the previous one
    /// after that (a back edge).
    Merged { input: usize, result: usize },
}

/// How an output of the layer comes from its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputMap {
    /// The body Result (index among the body's Results, in XML order).
    pub result: usize,
    /// `Some`: every iteration's value joined along the axis (in reverse iteration order when
    /// `reverse`); `None`: the last iteration's value.
    pub concat: Option<Joined>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Joined {
    pub axis: usize,
    pub reverse: bool,
}

/// One body and its port map, resolved to indices.
#[derive(Debug)]
pub struct Body {
    /// `body`, `then_body` or `else_body`.
    pub role: String,
    pub graph: Arc<Graph>,
    /// By body Parameter index (XML order).
    pub params: Vec<ParamSource>,
    /// By output slot of the layer.
    pub outputs: Vec<OutputMap>,
    /// Loop's condition Result: the body runs again only while its first element is true.
    pub condition: Option<usize>,
}

impl Body {
    /// The fact of body Result `r` among `facts` (the body graph's).
    fn result_fact(&self, facts: &[Vec<Fact>], r: usize) -> Fact {
        facts[self.graph.results[r]]
            .first()
            .cloned()
            .unwrap_or_else(Fact::unknown)
    }

    /// The declared fact of body Parameter `p`.
    fn declared(&self, p: usize) -> Fact {
        let mut f = self.graph.facts[self.graph.parameters[p]]
            .first()
            .cloned()
            .unwrap_or_else(Fact::unknown);
        f.value = None;
        f
    }
}

/// A Loop, TensorIterator or If: its kind and its bodies (If: then, else).
#[derive(Debug)]
pub struct ControlFlow {
    pub kind: FlowKind,
    pub bodies: Vec<Body>,
}

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
    let ok = b.ok;
    let bodies: Option<Vec<Body>> = bodies.into_iter().collect();
    (ok).then_some(())
        .and(bodies)
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

/// The op of a Loop, TensorIterator or If layer: inference through its bodies. The executor
/// runs the bodies itself (`eval` is not called).
#[derive(Debug)]
pub struct FlowOp {
    pub flow: Arc<ControlFlow>,
}

/// An error of a body's inference, as an error of the layer.
fn body_error(body: &Body, d: Diagnostic) -> OpError {
    let at = d
        .layer
        .as_ref()
        .map(|l| format!("{l}"))
        .unwrap_or_else(|| "a layer".into());
    OpError::new(d.code, format!("in <{}>, {at}: {}", body.role, d.message))
}

impl FlowOp {
    /// The facts of body `body`'s Parameters for these outer input facts (the first
    /// iteration's, for merged inputs).
    fn param_facts(&self, body: &Body, outer: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let name = self.flow.kind.name();
        let mut facts = Vec::with_capacity(body.params.len());
        for (p, source) in body.params.iter().enumerate() {
            let declared = body.declared(p);
            let param = &body.graph.model.layers[body.graph.parameters[p]];
            let (input, fact) = match *source {
                ParamSource::CurrentIteration => {
                    if !matches!(declared.ty, ElementType::I32 | ElementType::I64) {
                        return Err(OpError::new(
                            codes::ELEMENT_TYPE,
                            format!("{name}: the current-iteration Parameter \"{}\" is {}, not i32 or i64", param.name, declared.ty),
                        ));
                    }
                    let mut f = declared;
                    if !f.shape.is_static() {
                        f.shape = PartialShape::fixed(&[1]);
                    }
                    facts.push(f);
                    continue;
                }
                ParamSource::Invariant { input } | ParamSource::Merged { input, .. } => (
                    input,
                    outer.get(input).cloned().unwrap_or_else(Fact::unknown),
                ),
                ParamSource::Sliced { input, axis, .. } => {
                    let mut f = outer.get(input).cloned().unwrap_or_else(Fact::unknown);
                    if let Some(dims) = f.shape.dims() {
                        if axis >= dims.len() {
                            return Err(OpError::input(
                                input,
                                codes::AXIS,
                                format!("{name}: input {input} is sliced along axis {axis}, but its shape {} has rank {}", f.shape, dims.len()),
                            ));
                        }
                        let mut dims = dims.to_vec();
                        dims[axis] = Dim::fixed(1);
                        f.shape = PartialShape::new(dims);
                    }
                    (input, f)
                }
            };
            let mut fact = fact;
            fact.value = None;
            if declared.ty != ElementType::Dynamic
                && fact.ty != ElementType::Dynamic
                && declared.ty != fact.ty
            {
                return Err(OpError::input(
                    input,
                    codes::ELEMENT_TYPE,
                    format!("{name}: input {input} is {}, but it feeds body Parameter \"{}\", declared {}", fact.ty, param.name, declared.ty),
                ));
            }
            let Some(shape) = fact.shape.merge(&declared.shape) else {
                return Err(OpError::input(
                    input,
                    codes::SHAPE,
                    format!(
                        "{name}: input {input} gives {} to body Parameter \"{}\", declared {}",
                        fact.shape, param.name, declared.shape
                    ),
                ));
            };
            if fact.ty == ElementType::Dynamic {
                fact.ty = declared.ty;
            }
            fact.shape = shape;
            facts.push(fact);
        }
        Ok(facts)
    }

    /// The body's facts for these outer facts, carrying back-edged values until their facts
    /// hold every iteration's (a value that grows each iteration ends with unbounded dims).
    fn infer_body(&self, body: &Body, outer: &[Fact]) -> Result<Vec<Vec<Fact>>, OpError> {
        let mut params = self.param_facts(body, outer)?;
        for round in 0.. {
            let overrides: Vec<(NodeId, Fact)> = body
                .graph
                .parameters
                .iter()
                .copied()
                .zip(params.iter().cloned())
                .collect();
            let facts = body
                .graph
                .infer_with_inputs(&overrides)
                .map_err(|d| body_error(body, d))?;
            let mut changed = false;
            for (p, source) in body.params.iter().enumerate() {
                let ParamSource::Merged { result, .. } = *source else {
                    continue;
                };
                let r = body.result_fact(&facts, result);
                let param = &body.graph.model.layers[body.graph.parameters[p]];
                if r.ty != ElementType::Dynamic
                    && params[p].ty != ElementType::Dynamic
                    && r.ty != params[p].ty
                {
                    return Err(OpError::new(
                        codes::ELEMENT_TYPE,
                        format!(
                            "{}: a back edge carries {} into body Parameter \"{}\", which is {}",
                            self.flow.kind.name(),
                            r.ty,
                            param.name,
                            params[p].ty
                        ),
                    ));
                }
                let hull = params[p].shape.hull(&r.shape);
                if hull != params[p].shape {
                    changed = true;
                    params[p].shape = if round < 2 {
                        hull
                    } else {
                        unbounded(&params[p].shape, &hull)
                    };
                }
            }
            if !changed {
                return Ok(facts);
            }
        }
        unreachable!("the loop returns")
    }

    /// How many iterations a Loop or TensorIterator runs, when inference can tell.
    fn iterations(&self, body: &Body, outer: &[Fact], facts: &[Vec<Fact>]) -> Option<u64> {
        let slices = body.params.iter().filter_map(|s| match *s {
            ParamSource::Sliced { input, axis, .. } => {
                Some(outer.get(input)?.shape.dims()?.get(axis)?.get_static())
            }
            _ => None,
        });
        let slices: Option<Vec<u64>> = slices.collect();
        let fewest_slices = slices.as_ref().and_then(|s| s.iter().min().copied());
        if self.flow.kind == FlowKind::TensorIterator {
            return fewest_slices;
        }
        let scalar = |slot: usize| {
            let v = outer.get(slot)?.value.as_ref()?.to_i64_vec()?;
            (v.len() == 1).then(|| v[0])
        };
        if scalar(1) == Some(0) || scalar(0) == Some(0) {
            return Some(0);
        }
        if scalar(1) != Some(1) {
            return None;
        }
        let condition = body.condition.map(|r| {
            let f = body.result_fact(facts, r);
            f.value
                .and_then(|v| v.to_i64_vec())
                .and_then(|v| v.first().copied())
        });
        match condition {
            Some(Some(0)) => return Some(1),
            Some(None) => return None,
            _ => {}
        }
        let trip = scalar(0)?;
        let limit = if trip < 0 { None } else { Some(trip as u64) };
        match (limit, slices) {
            (_, None) => None,
            (Some(t), Some(s)) => Some(s.into_iter().fold(t, u64::min)),
            (None, Some(_)) => fewest_slices,
        }
    }

    fn outputs_of(
        &self,
        body: &Body,
        outer: &[Fact],
        facts: &[Vec<Fact>],
    ) -> Result<Vec<Fact>, OpError> {
        let n = self.iterations(body, outer, facts);
        body.outputs
            .iter()
            .enumerate()
            .map(|(slot, m)| {
                let mut f = body.result_fact(facts, m.result);
                f.value = None;
                let Some(joined) = m.concat else {
                    return Ok(f);
                };
                let Some(dims) = f.shape.dims() else {
                    return Ok(f);
                };
                if joined.axis >= dims.len() {
                    return Err(OpError::new(
                        codes::AXIS,
                        format!(
                            "{}: output {slot} joins iterations along axis {}, but each iteration's value is {}",
                            self.flow.kind.name(),
                            joined.axis,
                            f.shape
                        ),
                    ));
                }
                let mut dims = dims.to_vec();
                dims[joined.axis] = match (dims[joined.axis].get_static(), n) {
                    (Some(d), Some(n)) => Dim::fixed(d * n),
                    _ => Dim::DYNAMIC,
                };
                f.shape = PartialShape::new(dims);
                Ok(f)
            })
            .collect()
    }
}

/// `hull` with every dim that differs from `before` left unbounded above: a value that keeps
/// growing across iterations.
fn unbounded(before: &PartialShape, hull: &PartialShape) -> PartialShape {
    match (before.dims(), hull.dims()) {
        (Some(a), Some(h)) => PartialShape::new(
            a.iter()
                .zip(h)
                .map(|(x, y)| {
                    if x == y {
                        *y
                    } else {
                        Dim::interval(y.min(), None).unwrap_or(Dim::DYNAMIC)
                    }
                })
                .collect(),
        ),
        _ => PartialShape::dynamic_rank(),
    }
}

/// Loop's trip count and execution condition: integer and boolean, one element.
fn check_loop_inputs(inputs: &[Fact]) -> Result<(), OpError> {
    if inputs.len() < 2 {
        return Err(OpError::new(
            codes::ARITY,
            format!(
                "Loop-5 takes a trip count and an execution condition first; it has {} input(s)",
                inputs.len()
            ),
        ));
    }
    scalar_input(
        inputs,
        0,
        "trip count",
        &[ElementType::I32, ElementType::I64],
    )?;
    scalar_input(inputs, 1, "execution condition", &[ElementType::Boolean])
}

fn scalar_input(
    inputs: &[Fact],
    slot: usize,
    what: &str,
    types: &[ElementType],
) -> Result<(), OpError> {
    let f = &inputs[slot];
    if f.ty != ElementType::Dynamic && !types.contains(&f.ty) {
        let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        return Err(OpError::input(
            slot,
            codes::ELEMENT_TYPE,
            format!(
                "the {what} (input {slot}) is {}, not {}",
                f.ty,
                names.join(" or ")
            ),
        ));
    }
    let one = match f.shape.dims() {
        None => true,
        Some([]) => true,
        Some([d]) => d.contains(1),
        Some(_) => false,
    };
    if !one {
        return Err(OpError::input(
            slot,
            codes::SHAPE,
            format!(
                "the {what} (input {slot}) has shape {}; it must be a scalar or [1]",
                f.shape
            ),
        ));
    }
    Ok(())
}

impl Op for FlowOp {
    fn name(&self) -> &'static str {
        self.flow.kind.name()
    }

    fn value_inputs(&self) -> &'static [usize] {
        match self.flow.kind {
            FlowKind::Loop => &[0, 1],
            FlowKind::If => &[0],
            FlowKind::TensorIterator => &[],
        }
    }

    fn may_fold(&self) -> bool {
        false
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        match self.flow.kind {
            FlowKind::Loop => check_loop_inputs(inputs)?,
            FlowKind::If => {
                if inputs.is_empty() {
                    return Err(OpError::new(
                        codes::ARITY,
                        "If-8 takes a condition first; it has no input",
                    ));
                }
                scalar_input(inputs, 0, "condition", &[ElementType::Boolean])?;
            }
            FlowKind::TensorIterator => {}
        }
        let mut per_body = Vec::with_capacity(self.flow.bodies.len());
        for body in &self.flow.bodies {
            let facts = self.infer_body(body, inputs)?;
            per_body.push(self.outputs_of(body, inputs, &facts)?);
        }
        if self.flow.kind != FlowKind::If {
            return Ok(per_body.pop().expect("one body"));
        }
        let cond = inputs[0]
            .value
            .as_ref()
            .and_then(|v| v.to_i64_vec())
            .and_then(|v| v.first().copied());
        let (then, other) = (&per_body[0], &per_body[1]);
        match cond {
            Some(c) => Ok(if c != 0 { then.clone() } else { other.clone() }),
            None => then
                .iter()
                .zip(other)
                .enumerate()
                .map(|(slot, (a, b))| {
                    if a.ty != b.ty && a.ty != ElementType::Dynamic && b.ty != ElementType::Dynamic {
                        return Err(OpError::new(
                            codes::ELEMENT_TYPE,
                            format!("If-8: output {slot} is {} from <then_body> but {} from <else_body>", a.ty, b.ty),
                        ));
                    }
                    let ty = if a.ty == ElementType::Dynamic { b.ty } else { a.ty };
                    Ok(Fact::new(ty, a.shape.hull(&b.shape)))
                })
                .collect(),
        }
    }
}
