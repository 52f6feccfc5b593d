//! The op of a control-flow layer: inference through its bodies with the outer facts.

use std::sync::Arc;

use irun_ir::Diagnostic;
use irun_ops::{codes, Fact, Op, OpError};
use irun_tensor::{Dim, ElementType, PartialShape};

use super::{Body, ControlFlow, FlowKind, ParamSource};
use crate::graph::NodeId;

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
        // Hulls twice, then dims that still move become unbounded above: each merged fact
        // only widens, so the next round finds nothing to change.
        let mut round = 0;
        loop {
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
            round += 1;
        }
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
