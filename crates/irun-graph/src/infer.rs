//! Op resolution and the forward shape/type inference pass, with the declared-vs-inferred check
//! of every port.

use std::collections::BTreeMap;
use std::sync::Arc;

use irun_ir::{Diagnostic, Layer, PortDirection, PortRef, Severity};
use irun_ops::{codes, Fact, Op, OpError, Resolution};
use irun_tensor::{ElementType, Tensor};

use crate::graph::{Graph, NodeId, Outlet};

/// A Const feeding a value input (an axis, a shape) is decoded only up to this many elements,
/// and an op whose inputs are all known is evaluated at inference time (folded) only when each
/// output has at most this many.
pub const MAX_FOLDED_ELEMENTS: usize = 1 << 16;

/// An earlier run-time inference ([`Graph::infer_with_inputs_after`]): the facts it was
/// given, by node, and the facts it returned.
pub type Earlier<'a> = (&'a [(NodeId, Fact)], &'a [Vec<Fact>]);

impl Graph {
    /// Resolves every layer's op (unsupported types are reported once per type) and runs
    /// inference over the topological order. Called by `build`.
    pub(crate) fn resolve_and_infer(&mut self) {
        self.resolve_ops();
        self.facts = vec![Vec::new(); self.nodes.len()];
        for i in 0..self.order.len() {
            let n = self.order[i];
            self.infer_node(n);
        }
    }

    fn resolve_ops(&mut self) {
        let mut unsupported: BTreeMap<String, Vec<&Layer>> = BTreeMap::new();
        let mut ops: Vec<Option<Box<dyn Op>>> = Vec::with_capacity(self.nodes.len());
        let mut diags = Vec::new();
        let mut flows = Vec::with_capacity(self.nodes.len());
        for l in &self.model.layers {
            let flow = match crate::control_flow::FlowKind::of(l) {
                None => None,
                Some(Err(e)) => {
                    diags.push(op_diagnostic(l, &e));
                    ops.push(None);
                    flows.push(None);
                    continue;
                }
                Some(Ok(kind)) => {
                    Some(crate::control_flow::build(&self.model, l, kind, &mut diags))
                }
            };
            if let Some(flow) = flow {
                let flow = flow.map(Arc::new);
                ops.push(
                    flow.clone()
                        .map(|flow| Box::new(crate::control_flow::FlowOp { flow }) as Box<dyn Op>),
                );
                flows.push(flow);
                continue;
            }
            flows.push(None);
            if let Some(body) = l.bodies.first() {
                diags.push(
                    Diagnostic::warning(
                        irun_ir::codes::UNKNOWN_ELEMENT,
                        format!(
                            "<{}> is ignored: only Loop, TensorIterator and If have bodies, not {}",
                            body.role, l.type_name
                        ),
                    )
                    .at(body.pos)
                    .on_layer(l.layer_ref()),
                );
            }
            match irun_ops::resolve(l) {
                Resolution::Op {
                    op,
                    unknown_attributes,
                } => {
                    for name in unknown_attributes {
                        let pos = l.data_attr(&name).map(|a| a.pos);
                        diags.push(
                            Diagnostic::warning(
                                codes::UNKNOWN_ATTRIBUTE,
                                format!("{} has no attribute `{name}`; it is ignored", op.name()),
                            )
                            .at_opt(pos)
                            .on_layer(l.layer_ref()),
                        );
                    }
                    ops.push(Some(op));
                }
                Resolution::Unsupported => {
                    let key = if l.version.is_empty() {
                        l.type_name.clone()
                    } else {
                        format!("{}-{}", l.type_name, l.version)
                    };
                    unsupported.entry(key).or_default().push(l);
                    ops.push(None);
                }
                Resolution::Invalid(e) => {
                    diags.push(op_diagnostic(l, &e));
                    ops.push(None);
                }
            }
        }
        for (key, layers) in unsupported {
            let ids: Vec<String> = layers.iter().map(|l| l.id.to_string()).collect();
            diags.push(
                Diagnostic::new(
                    Severity::Warning,
                    codes::UNSUPPORTED_OP,
                    format!("irun does not support {key} yet; {} layer(s) not checked, their outputs are treated as unknown: {}", layers.len(), ids.join(", ")),
                )
                .at(layers[0].pos)
                .on_layer(layers[0].layer_ref()),
            );
        }
        self.ops = ops;
        self.flows = flows;
        self.diagnostics.extend(diags);
    }

    /// The value of an outlet, when known at inference time: from the fact (ShapeOf of a static
    /// shape), or by decoding a small Const.
    fn value_of(&self, facts: &[Vec<Fact>], o: Outlet) -> Option<Arc<Tensor>> {
        if let Some(v) = facts[o.node].get(o.slot).and_then(|f| f.value.clone()) {
            return Some(v);
        }
        let c = self.layer(o.node).constant.as_ref()?;
        if self.layer(o.node).type_name != "Const" || c.element_count() > MAX_FOLDED_ELEMENTS {
            return None;
        }
        self.model.weights.decode(c).ok().map(Arc::new)
    }

    /// Constant folding: when every input of node `n` has a known value and every output is
    /// static and small, runs the op's kernel now and records the values in `outputs`, so
    /// that shape inputs computed from constants (`Reshape(x, Concat(Gather(ShapeOf(x)),
    /// ...))`) give static shapes downstream, and the executor need not run the node. A
    /// kernel error (a division by zero in constants) leaves the node to run time, which
    /// reports it; values that contradict the inferred facts are not recorded.
    fn fold(&self, facts: &[Vec<Fact>], n: NodeId, op: &dyn Op, outputs: &mut [Fact]) {
        let node = &self.nodes[n];
        if node.inputs.is_empty() || !op.may_fold() || outputs.iter().all(|f| f.value.is_some()) {
            return;
        }
        let small = outputs.iter().all(|f| {
            f.shape
                .to_static()
                .and_then(|s| irun_tensor::element_count(&s))
                .is_some_and(|c| c <= MAX_FOLDED_ELEMENTS)
        });
        if !small || self.decompresses_weights(n) {
            return;
        }
        let Some(values) = node
            .inputs
            .iter()
            .map(|o| o.and_then(|o| self.value_of(facts, o)))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let Ok(results) = op.eval(values) else {
            return;
        };
        let fits = results.len() == outputs.len()
            && results.iter().zip(outputs.iter()).all(|(v, f)| {
                v.element_type() == f.ty && f.shape.to_static().as_deref() == Some(v.shape())
            });
        if fits {
            for (f, v) in outputs.iter_mut().zip(results) {
                f.value = Some(v);
            }
        }
    }

    /// Whether `n` is the Convert of compressed weight codes (4- and 8-bit floats, 4-bit
    /// integers, or a matrix of at least 256 8-bit integers) to a float type: the first
    /// step of the decompression subgraphs NNCF writes. Folding it would hold a widened copy
    /// of the weights that no shape depends on and that the executor, which reads the codes
    /// in place, never uses.
    fn decompresses_weights(&self, n: NodeId) -> bool {
        use irun_tensor::ElementType as E;
        let layer = self.layer(n);
        let source = self.nodes[n].inputs.first().copied().flatten();
        let Some(info) = source.and_then(|o| self.layer(o.node).constant.as_ref()) else {
            return false;
        };
        let to_float = layer
            .data_attr("destination_type")
            .and_then(|a| E::from_type_string(&a.value))
            .is_some_and(|t| t.is_real());
        let codes = match info.element_type {
            E::U4 | E::I4 | E::Nf4 | E::F4e2m1 | E::F8e4m3 | E::F8e5m2 => true,
            E::U8 | E::I8 => info.shape.len() >= 2 && info.element_count() >= 256,
            _ => false,
        };
        layer.type_name == "Convert" && to_float && codes
    }

    /// The input facts of node `n` given the facts of its producers, with the values of the
    /// inputs its op reads.
    fn input_facts(&self, facts: &[Vec<Fact>], n: NodeId) -> Vec<Fact> {
        let value_inputs = self.ops[n].as_ref().map_or(&[][..], |op| op.value_inputs());
        self.nodes[n]
            .inputs
            .iter()
            .enumerate()
            .map(|(slot, src)| {
                let Some(o) = *src else {
                    return Fact::unknown();
                };
                let mut f = facts[o.node]
                    .get(o.slot)
                    .cloned()
                    .unwrap_or_else(Fact::unknown);
                f.value = if value_inputs.contains(&slot) {
                    self.value_of(facts, o)
                } else {
                    None
                };
                f
            })
            .collect()
    }

    /// Inference again, at run time, with the concrete facts of some Parameters: the output
    /// facts of every node in `order`, or the first op that rejects its inputs. Declared ports
    /// are not compared again (they are hints, and `check` has reported them).
    pub fn infer_with_inputs(
        &self,
        inputs: &[(NodeId, Fact)],
    ) -> Result<Vec<Vec<Fact>>, Diagnostic> {
        self.infer_with_inputs_after(inputs, None)
    }

    /// [`Graph::infer_with_inputs`], given an earlier call's inputs and the facts it
    /// returned: a node none of whose producers' facts differ from that call's takes its facts
    /// from it, as inference is a function of the input facts alone (but for the nodes that
    /// call was given facts for: those are inferred again unless given again). A decoder's
    /// step, whose inputs differ from the last step's only in the sequence length, then infers
    /// only the nodes that length reaches (its layers' projections and MLPs keep their shapes).
    pub fn infer_with_inputs_after(
        &self,
        inputs: &[(NodeId, Fact)],
        previous: Option<Earlier<'_>>,
    ) -> Result<Vec<Vec<Fact>>, Diagnostic> {
        let (was_given, previous) = match previous {
            Some((given, facts)) if facts.len() == self.nodes.len() => (given, Some(facts)),
            _ => (&[][..], None),
        };
        let mut facts = vec![Vec::new(); self.nodes.len()];
        // Whether a node's facts may differ from `previous`'s.
        let mut changed = vec![true; self.nodes.len()];
        for &n in &self.order {
            if let Some((_, f)) = inputs.iter().find(|(p, _)| *p == n) {
                facts[n] = vec![f.clone()];
                changed[n] = previous.is_none_or(|p| p[n] != facts[n]);
                continue;
            }
            // Values the model's own inference found (constants and what folds from them)
            // hold for any inputs, which only refine the declared shapes: not computed again
            // (an LLM's decompression subgraphs would be, at every decode step).
            let known = &self.facts[n];
            if !known.is_empty() && known.iter().all(|f| f.value.is_some()) {
                facts[n] = known.clone();
                changed[n] = false;
                continue;
            }
            if let Some(p) = previous.filter(|_| was_given.iter().all(|(m, _)| *m != n)) {
                let producers = self.nodes[n].inputs.iter().flatten();
                if producers.clone().all(|o| !changed[o.node]) {
                    facts[n] = p[n].clone();
                    changed[n] = false;
                    continue;
                }
            }
            let input_facts = self.input_facts(&facts, n);
            let layer = self.layer(n);
            facts[n] = match &self.ops[n] {
                None => vec![Fact::unknown(); layer.outputs.len()],
                Some(op) => {
                    let mut out = op
                        .infer(&input_facts)
                        .map_err(|e| op_diagnostic(layer, &e))?;
                    self.fold(&facts, n, op.as_ref(), &mut out);
                    out
                }
            };
            changed[n] = previous.is_none_or(|p| p[n] != facts[n]);
        }
        Ok(facts)
    }

    fn infer_node(&mut self, n: NodeId) {
        let inputs = self.input_facts(&self.facts, n);
        let layer = &self.model.layers[n];
        let outputs = match &self.ops[n] {
            None => vec![Fact::unknown(); layer.outputs.len()],
            Some(op) => match op.infer(&inputs) {
                Ok(mut f) => {
                    self.fold(&self.facts, n, op.as_ref(), &mut f);
                    f
                }
                Err(e) => {
                    self.diagnostics.push(op_diagnostic(layer, &e));
                    vec![Fact::unknown(); layer.outputs.len()]
                }
            },
        };
        let mut diags = Vec::new();
        for (slot, (port, fact)) in layer.outputs.iter().zip(&outputs).enumerate() {
            if let Some(msg) = contradiction(port, fact) {
                let what = self.ops[n].as_ref().map_or("the layer", |op| op.name());
                diags.push(
                    Diagnostic::error(
                        codes::DECLARED_OUTPUT,
                        format!("output port {} {msg}, but {what} infers {fact}", port.id),
                    )
                    .at(port.pos)
                    .on_layer(layer.layer_ref())
                    .on_port(PortRef {
                        direction: PortDirection::Output,
                        slot,
                        port_id: Some(port.id),
                    }),
                );
            }
        }
        for (slot, (port, fact)) in layer.inputs.iter().zip(&inputs).enumerate() {
            if let Some(msg) = contradiction(port, fact) {
                let src = self.nodes[n].inputs[slot]
                    .map(|o| self.layer(o.node).id)
                    .unwrap_or_default();
                diags.push(
                    Diagnostic::error(
                        codes::DECLARED_INPUT,
                        format!(
                            "input port {} {msg}, but its producer (layer {src}) outputs {fact}",
                            port.id
                        ),
                    )
                    .at(port.pos)
                    .on_layer(layer.layer_ref())
                    .on_port(PortRef {
                        direction: PortDirection::Input,
                        slot,
                        port_id: Some(port.id),
                    }),
                );
            }
        }
        self.diagnostics.extend(diags);
        self.facts[n] = outputs;
    }
}

/// How a declared port contradicts a fact, if it does. `-1` dims and a missing or dynamic
/// (`UNSPECIFIED`) precision accept anything; a dynamic inferred type or rank accepts any
/// declaration.
fn contradiction(port: &irun_ir::Port, fact: &Fact) -> Option<String> {
    if let Some(p) = port.precision {
        if fact.ty != ElementType::Dynamic && p != ElementType::Dynamic && p != fact.ty {
            return Some(format!("declares precision {}", p.precision_name()));
        }
    }
    let dims = fact.shape.dims()?;
    let declared = || format!("declares shape {}", port.declared_shape());
    if port.dims.len() != dims.len() {
        return Some(declared());
    }
    let bad = port
        .dims
        .iter()
        .zip(dims)
        .any(|(&d, f)| d >= 0 && !f.contains(d as u64));
    bad.then(declared)
}

/// An op error as a diagnostic on its layer, pointing at the attribute or port it is about.
fn op_diagnostic(layer: &Layer, e: &OpError) -> Diagnostic {
    let mut d = Diagnostic::error(e.code, e.message.clone())
        .at(layer.pos)
        .on_layer(layer.layer_ref());
    if let Some(name) = &e.attribute {
        d = d.at_opt(
            layer
                .data_attr(name)
                .map(|a| a.pos)
                .or(layer.data.as_ref().map(|x| x.pos)),
        );
    }
    if let Some((direction, slot)) = e.port {
        let port = match direction {
            PortDirection::Input => layer.inputs.get(slot),
            PortDirection::Output => layer.outputs.get(slot),
        };
        d = d.at_opt(port.map(|p| p.pos)).on_port(PortRef {
            direction,
            slot,
            port_id: port.map(|p| p.id),
        });
    }
    d
}
