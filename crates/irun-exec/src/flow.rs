//! Running Loop-5, TensorIterator-1 and If-8: each body is compiled once, with the model, into
//! an executable that shares the model's pool; a run feeds it the port map's values
//! iteration by iteration, after running a loop body's loop-invariant part for every
//! iteration at once where it can (`hoist.rs`).
//!
//! Loop: no iteration when the execution condition is false or the trip count is 0;
//! otherwise iteration `i` runs the body, appends its values to the joined outputs, then stops
//! when the body's condition is false or `i + 1` reaches the trip count; a negative trip count
//! is no limit, but then the slices of a sliced input are (an iteration past the slices under
//! a trip count is an error, where OpenVINO's reference would reread the last slice). TensorIterator runs once per slice. If runs the body its
//! condition picks. A back-edged value reaches the next iteration as the only reference when
//! nothing else holds it, so a body may update it in place.

use std::sync::Arc;

use irun_graph::control_flow::{Body, ControlFlow, FlowKind, OutputMap, ParamSource};
use irun_graph::{Graph, NodeId};
use irun_ops::{Op, Value};
use irun_tensor::{ElementType, Tensor};

use crate::hoist::{Hoisted, Refusal};
use crate::{Executable, Options, RunError, RunErrorKind};

/// A control-flow node's bodies, compiled.
pub(crate) struct FlowExec {
    flow: Arc<ControlFlow>,
    pub(crate) bodies: Vec<Executable>,
    /// A Loop's or TensorIterator's body with its loop-invariant part run before the loop
    /// (`hoist.rs`), or why it has none.
    pub(crate) hoisted: Result<Hoisted, Refusal>,
}

/// Compiles the bodies of every Loop, TensorIterator and If node of `graph` to run in `pool`.
pub(crate) fn compile_bodies(
    graph: &Graph,
    options: &Options,
    pool: &Arc<rayon::ThreadPool>,
) -> Result<Vec<Option<FlowExec>>, RunError> {
    let mut out = Vec::with_capacity(graph.nodes.len());
    for (n, flow) in graph.flows.iter().enumerate() {
        let Some(flow) = flow else {
            out.push(None);
            continue;
        };
        let mut bodies = Vec::with_capacity(flow.bodies.len());
        for body in &flow.bodies {
            let exe = Executable::compile_in(body.graph.clone(), options, Some(pool.clone()))
                .map_err(|e| in_body(graph, n, body, "", e))?;
            bodies.push(exe);
        }
        let hoisted = match flow.kind {
            FlowKind::If => Err("not a loop"),
            _ if !options.prepare_constants => Err("constants are not prepared"),
            _ => Hoisted::build(flow.kind, &flow.bodies[0], &bodies[0], options, pool)
                .map_err(|e| in_body(graph, n, &flow.bodies[0], "", e))?,
        };
        out.push(Some(FlowExec {
            flow: flow.clone(),
            bodies,
            hoisted,
        }));
    }
    Ok(out)
}

/// A body's error as the error of its layer.
fn in_body(graph: &Graph, n: NodeId, body: &Body, when: &str, e: RunError) -> RunError {
    let layer = graph.layer(n);
    let mut out = RunError::new(
        e.kind,
        format!(
            "layer {} (\"{}\", {}): {when}<{}>: {}",
            layer.id, layer.name, layer.type_name, body.role, e.message
        ),
    )
    .on_layer(Some(layer.layer_ref()));
    out.code = e.code;
    out
}

/// The first element of a one-element integer or boolean tensor.
fn scalar(v: &Tensor) -> Option<i64> {
    let values = v.to_i64_vec()?;
    (values.len() == 1).then(|| values[0])
}

impl Executable {
    /// Runs node `n`, a Loop, TensorIterator or If, on its inputs.
    pub(crate) fn run_flow(
        &self,
        n: NodeId,
        exec: &FlowExec,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, RunError> {
        let kind = exec.flow.kind;
        let fail = |message: String| {
            self.layer_error(n, RunErrorKind::Op, message)
                .with_code(irun_ops::codes::RUN_VALUE)
        };
        let one = |slot: usize, what: &str| {
            scalar(&args[slot]).ok_or_else(|| {
                fail(format!(
                    "the {what} (input {slot}) must hold one value; it has shape {}",
                    irun_tensor::fmt_shape(args[slot].shape())
                ))
            })
        };
        match kind {
            FlowKind::If => {
                let pick = usize::from(one(0, "condition")? == 0);
                let (body, exe) = (&exec.flow.bodies[pick], &exec.bodies[pick]);
                let inputs = body
                    .params
                    .iter()
                    .map(|s| match *s {
                        ParamSource::Invariant { input } => Ok(args[input].clone()),
                        // The port map's builder gives If's bodies nothing else.
                        _ => Err(self
                            .layer_error(
                                n,
                                RunErrorKind::Op,
                                format!("internal error: an If body Parameter fed as {s:?}"),
                            )
                            .with_code(irun_ops::codes::INTERNAL)),
                    })
                    .collect::<Result<_, _>>()?;
                let results = exe
                    .run_body(inputs)
                    .map_err(|e| in_body(&self.graph, n, body, "", e))?;
                Ok(body
                    .outputs
                    .iter()
                    .map(|m| results[m.result].clone())
                    .collect())
            }
            FlowKind::Loop => {
                let trip = one(0, "trip count")?;
                let run = one(1, "execution condition")? != 0 && trip != 0;
                let limit = if run {
                    u64::try_from(trip).unwrap_or(u64::MAX)
                } else {
                    0
                };
                self.iterate(n, exec, args, limit)
            }
            FlowKind::TensorIterator => self.iterate(n, exec, args, u64::MAX),
        }
    }

    /// Runs a Loop's or TensorIterator's body at most `limit` times (and at most once per
    /// slice of its sliced inputs).
    fn iterate(
        &self,
        n: NodeId,
        exec: &FlowExec,
        args: Vec<Value>,
        limit: u64,
    ) -> Result<Vec<Value>, RunError> {
        let body = &exec.flow.bodies[0];
        let name = exec.flow.kind.name();
        let fail = |message: String| {
            self.layer_error(n, RunErrorKind::Op, message)
                .with_code(irun_ops::codes::RUN_VALUE)
        };
        // Without a trip count the slices set the number of iterations; with one, an
        // iteration past the slices is an error when it comes.
        let mut count = limit;
        for source in &body.params {
            let ParamSource::Sliced { input, axis, .. } = *source else {
                continue;
            };
            let shape = args[input].shape();
            let Some(&d) = shape.get(axis) else {
                return Err(fail(format!(
                    "input {input} is sliced along axis {axis}, but it has shape {}",
                    irun_tensor::fmt_shape(shape)
                )));
            };
            if limit == u64::MAX {
                count = count.min(d as u64);
            }
        }
        if exec.flow.kind == FlowKind::TensorIterator && count == u64::MAX {
            return Err(fail(
                "TensorIterator-1 has no sliced input, so nothing sets its number of iterations"
                    .into(),
            ));
        }
        // The loop-invariant part's values for every iteration, when this loop is one it was
        // made for; the body then reads no slice of the inputs only that part read.
        let hoisted = match &exec.hoisted {
            Ok(h) => h
                .run(body, &args, count, self.memory_limit / 4)
                .map_err(|(node, e)| self.hoisted_error(n, body, h, node, e))?
                .map(|stacked| (h, stacked)),
            Err(_) => None,
        };
        let (exe, unread): (_, &[Option<Value>]) = match &hoisted {
            Some((h, _)) => (&h.exe, &h.unread),
            None => (&exec.bodies[0], &[]),
        };
        // Every slice of each sliced input the body reads, in the order iterations read them.
        let mut slices: Vec<Option<Vec<Value>>> = vec![None; body.params.len()];
        for (p, source) in body.params.iter().enumerate() {
            let ParamSource::Sliced {
                input,
                axis,
                reverse,
            } = *source
            else {
                continue;
            };
            if unread.get(p).is_some_and(Option::is_some) {
                continue;
            }
            let data = &args[input];
            let d = data.shape()[axis];
            let mut parts = irun_ops::movement::split::cut(data, axis, &vec![1; d], name)
                .map_err(|e| fail(e.message))?;
            if reverse {
                parts.reverse();
            }
            slices[p] = Some(parts);
        }
        let mut carried: Vec<Option<Value>> = body
            .params
            .iter()
            .map(|s| match *s {
                ParamSource::Merged { input, .. } => Some(args[input].clone()),
                _ => None,
            })
            .collect();
        let mut joined: Vec<Vec<Value>> = vec![Vec::new(); body.outputs.len()];
        let mut last: Option<Vec<Value>> = None;
        let mut i: u64 = 0;
        while i < count {
            let mut inputs = Vec::with_capacity(body.params.len());
            for (p, source) in body.params.iter().enumerate() {
                inputs.push(match *source {
                    ParamSource::CurrentIteration => self.iteration_number(n, body, p, i)?,
                    ParamSource::Sliced { .. } if slices[p].is_none() => {
                        unread[p].clone().expect("a Parameter only the hoisted part reads")
                    }
                    ParamSource::Sliced { input, axis, .. } => {
                        let parts = slices[p].as_ref().expect("sliced above");
                        parts.get(i as usize).cloned().ok_or_else(|| {
                            fail(format!(
                                "iteration {i} reads slice {i} of input {input}, which has {} along axis {axis}",
                                parts.len()
                            ))
                        })?
                    }
                    ParamSource::Invariant { input } => args[input].clone(),
                    ParamSource::Merged { .. } => carried[p].take().expect("carried"),
                });
            }
            if let Some((h, stacked)) = &hoisted {
                let row = stacked
                    .row(i as usize)
                    .map_err(|(node, e)| self.hoisted_error(n, body, h, node, e))?;
                inputs.extend(row);
            }
            let results = exe
                .run_body(inputs)
                .map_err(|e| in_body(&self.graph, n, body, &format!("iteration {i} of "), e))?;
            for (slot, m) in body.outputs.iter().enumerate() {
                if m.concat.is_some() {
                    joined[slot].push(results[m.result].clone());
                }
            }
            let go_on = match body.condition {
                Some(r) => {
                    scalar(&results[r]).ok_or_else(|| {
                        fail(format!(
                            "the body's condition must hold one value; iteration {i} gave shape {}",
                            irun_tensor::fmt_shape(results[r].shape())
                        ))
                    })? != 0
                }
                None => true,
            };
            for (p, source) in body.params.iter().enumerate() {
                if let ParamSource::Merged { result, .. } = *source {
                    carried[p] = Some(results[result].clone());
                }
            }
            last = Some(results);
            i += 1;
            if !go_on {
                break;
            }
        }
        drop(carried);
        body.outputs
            .iter()
            .zip(joined)
            .enumerate()
            .map(|(slot, (m, values))| match m.concat {
                Some(j) => self.join(n, body, m, values, j.axis, j.reverse),
                None => match &last {
                    Some(results) => Ok(results[m.result].clone()),
                    None => initial_value(body, m, &args).ok_or_else(|| {
                        fail(format!(
                            "{name} ran no iteration, so output {slot} (the last value of a body Result no back edge starts) has no value"
                        ))
                    }),
                },
            })
            .collect()
    }

    /// An error of the loop-invariant part `h` of node `n`'s body, at body node `node`.
    fn hoisted_error(
        &self,
        n: NodeId,
        body: &Body,
        h: &Hoisted,
        node: NodeId,
        e: irun_ops::OpError,
    ) -> RunError {
        let e = h
            .exe
            .layer_error(node, RunErrorKind::Op, e.message)
            .with_code(e.code);
        in_body(&self.graph, n, body, "the loop-invariant part of ", e)
    }

    /// The current-iteration Parameter's value: `i` in its type, in its declared shape when
    /// that is static (a scalar or `[1]`), else `[1]`.
    fn iteration_number(
        &self,
        n: NodeId,
        body: &Body,
        p: usize,
        i: u64,
    ) -> Result<Value, RunError> {
        let fact = &body.graph.facts[body.graph.parameters[p]][0];
        let shape = fact.shape.to_static().unwrap_or_else(|| vec![1]);
        let count = shape.iter().product::<usize>();
        let t = match fact.ty {
            ElementType::I32 => i32::try_from(i)
                .ok()
                .and_then(|v| Tensor::from_i32(shape, vec![v; count]).ok()),
            _ => Tensor::from_i64(shape, vec![i as i64; count]).ok(),
        };
        t.map(Arc::new).ok_or_else(|| {
            self.layer_error(
                n,
                RunErrorKind::Op,
                format!("iteration {i} does not fit the current-iteration Parameter ({fact})"),
            )
        })
    }

    /// The iterations' values of a joined output, in iteration order (reversed for a negative
    /// stride), along `axis`; an empty tensor of the body Result's shape when no iteration ran.
    fn join(
        &self,
        n: NodeId,
        body: &Body,
        m: &OutputMap,
        mut values: Vec<Value>,
        axis: usize,
        reverse: bool,
    ) -> Result<Value, RunError> {
        let fail = |message: String| {
            self.layer_error(n, RunErrorKind::Op, message)
                .with_code(irun_ops::codes::RUN_SHAPE)
        };
        if values.is_empty() {
            let fact = &body.graph.facts[body.graph.results[m.result]][0];
            let mut shape = fact.shape.to_static().ok_or_else(|| {
                fail(format!(
                    "no iteration ran, and the joined output's per-iteration shape {} is not static, so its empty shape is unknown",
                    fact.shape
                ))
            })?;
            if axis >= shape.len() {
                return Err(fail(format!(
                    "cannot join along axis {axis} values of shape {}",
                    fact.shape
                )));
            }
            shape[axis] = 0;
            return Tensor::zeros(fact.ty, shape)
                .map(Arc::new)
                .map_err(|e| fail(e.to_string()));
        }
        if reverse {
            values.reverse();
        }
        if let Some(v) = values.iter().find(|v| v.shape().len() <= axis) {
            return Err(fail(format!(
                "cannot join along axis {axis} values of shape {}",
                irun_tensor::fmt_shape(v.shape())
            )));
        }
        let concat = irun_ops::movement::concat::Concat { axis: axis as i64 };
        concat
            .eval(values)
            .map(|mut out| out.remove(0))
            .map_err(|e| fail(format!("joining the iterations' values: {}", e.message)))
    }
}

/// What a last-value output is when no iteration ran: the outer value that a back edge from its
/// Result would have replaced (ONNX Loop's rule), if there is one.
fn initial_value(body: &Body, m: &OutputMap, args: &[Value]) -> Option<Value> {
    body.params.iter().find_map(|s| match *s {
        ParamSource::Merged { input, result } if result == m.result => Some(args[input].clone()),
        _ => None,
    })
}
