//! The layer graph: who feeds whom, in which order, and what the model's inputs and outputs are.

use std::collections::HashMap;
use std::sync::Arc;

use irun_ir::{codes, Diagnostic, Edge, IrModel, Layer, PortDirection, PortRef};
use irun_ops::{Fact, Op};

use crate::control_flow::ControlFlow;

/// Index of a layer in `IrModel::layers` (and of its node in `Graph::nodes`).
pub type NodeId = usize;

/// An output of a node: `(node, output slot)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Outlet {
    pub node: NodeId,
    pub slot: usize,
}

/// One layer's place in the graph.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// The producer of each input slot, by position in `<input>`; `None` if no edge feeds it.
    pub inputs: Vec<Option<Outlet>>,
    /// Every consumer of each output slot: `(node, input slot)`.
    pub consumers: Vec<Vec<(NodeId, usize)>>,
}

/// A graph built from an [`IrModel`]. Structure problems and op/inference problems are in
/// `diagnostics`; when any of them is an error, `order` holds only what could be ordered.
#[derive(Debug)]
pub struct Graph {
    pub model: IrModel,
    pub nodes: Vec<Node>,
    /// Parameter layers in XML order: the model inputs.
    pub parameters: Vec<NodeId>,
    /// Result layers in XML order: the model outputs.
    pub results: Vec<NodeId>,
    /// Topological order of every node reachable from a Result (or a sink such as Assign), plus
    /// every Parameter (an unused input is still an input, as in OpenVINO's `get_ordered_ops`),
    /// producers before consumers. Other unreachable layers are not in it.
    pub order: Vec<NodeId>,
    pub diagnostics: Vec<Diagnostic>,
    /// The resolved op of each node; `None` for unsupported or invalid layers.
    pub ops: Vec<Option<Box<dyn Op>>>,
    /// Inferred output facts of each node (empty for nodes not in `order`).
    pub facts: Vec<Vec<Fact>>,
    /// The state variables (ReadValue/Assign `variable_id`s) of the ordered nodes.
    pub variables: Vec<crate::Variable>,
    /// The bodies and port maps of Loop, TensorIterator and If nodes (`None` for the others,
    /// and for such a node whose bodies could not be built).
    pub flows: Vec<Option<Arc<ControlFlow>>>,
}

/// The slot an edge's start (`output`) or end port has in its layer, or the diagnostic for a
/// port that does not exist or points the wrong way.
fn edge_port_slot(layer: &Layer, e: &Edge, output: bool) -> Result<usize, Diagnostic> {
    let (port, slot, opposite, verb, kind, other_kind) = if output {
        (
            e.from_port,
            layer.output_slot(e.from_port),
            layer.input_slot(e.from_port),
            "starts",
            "output",
            "input",
        )
    } else {
        (
            e.to_port,
            layer.input_slot(e.to_port),
            layer.output_slot(e.to_port),
            "ends",
            "input",
            "output",
        )
    };
    slot.ok_or_else(|| {
        let (code, what) = match opposite {
            Some(_) => (
                codes::EDGE_DIRECTION,
                format!("which is an {other_kind} port"),
            ),
            None => (
                codes::DANGLING_EDGE,
                format!("which has no such {kind} port"),
            ),
        };
        Diagnostic::error(
            code,
            format!("edge {verb} at port {port} of layer {}, {what}", layer.id),
        )
        .at(e.pos)
        .on_layer(layer.layer_ref())
    })
}

fn is_type(layer: &Layer, name: &str) -> bool {
    layer.type_name.eq_ignore_ascii_case(name)
}

/// Layers that end a path: Results, and the stateful sinks OpenVINO also starts its DFS from.
fn is_sink(layer: &Layer) -> bool {
    is_type(layer, "Result") || is_type(layer, "Assign")
}

impl Graph {
    /// The graph of a model, checked and inferred.
    pub fn build(model: IrModel) -> Graph {
        Graph::build_net(model, "the model")
    }

    /// The graph of a Loop's, TensorIterator's or If's body.
    pub(crate) fn build_body(model: IrModel) -> Graph {
        Graph::build_net(model, "the body")
    }

    fn build_net(model: IrModel, what: &str) -> Graph {
        let mut g = Graph {
            nodes: vec![Node::default(); model.layers.len()],
            parameters: Vec::new(),
            results: Vec::new(),
            order: Vec::new(),
            diagnostics: Vec::new(),
            ops: Vec::new(),
            facts: Vec::new(),
            variables: Vec::new(),
            flows: Vec::new(),
            model,
        };
        let ids = g.index_ids();
        g.check_type_spellings();
        g.wire_edges(&ids);
        g.check_unfed_inputs();
        for (i, l) in g.model.layers.iter().enumerate() {
            if is_type(l, "Parameter") {
                g.parameters.push(i);
            } else if is_type(l, "Result") {
                g.results.push(i);
            }
        }
        if g.results.is_empty() {
            g.diagnostics.push(Diagnostic::error(
                codes::NO_RESULT,
                format!("{what} has no Result layer, so it has no outputs"),
            ));
        }
        // A body's Parameters are fed by its layer's port map, which may map some that the
        // body does not read (a loop counter, an If branch using part of the inputs): no note.
        g.topological_order(what == "the model");
        g.resolve_and_infer();
        g.collect_variables();
        g
    }

    pub fn layer(&self, n: NodeId) -> &Layer {
        &self.model.layers[n]
    }

    /// Reader and graph diagnostics together, reader first.
    pub fn all_diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.model.diagnostics.iter().chain(&self.diagnostics)
    }

    /// The error diagnostics, reader first: what makes the model invalid.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.all_diagnostics().filter(|d| d.is_error())
    }

    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }

    /// Maps layer ids to node ids; a repeated id is an error and the later layer is not wired.
    fn index_ids(&mut self) -> HashMap<u64, NodeId> {
        let mut ids = HashMap::with_capacity(self.model.layers.len());
        for (i, l) in self.model.layers.iter().enumerate() {
            if let Some(&first) = ids.get(&l.id) {
                let first: &Layer = &self.model.layers[first];
                self.diagnostics.push(
                    Diagnostic::error(
                        codes::DUPLICATE_ID,
                        format!(
                            "layer id {} is used twice (first by \"{}\" at line {})",
                            l.id, first.name, first.pos.line
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
            } else {
                ids.insert(l.id, i);
            }
        }
        ids
    }

    /// OpenVINO loads a constant's value only for the exact spelling `Const`; `Constant` or
    /// `const` would silently build a constant without data there.
    fn check_type_spellings(&mut self) {
        for l in &self.model.layers {
            if (is_type(l, "Const") || is_type(l, "Constant")) && l.type_name != "Const" {
                self.diagnostics.push(
                    Diagnostic::error(
                        codes::BAD_TYPE_SPELLING,
                        format!(
                            "layer type \"{}\" must be spelled \"Const\" in IR",
                            l.type_name
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
            }
        }
    }

    fn wire_edges(&mut self, ids: &HashMap<u64, NodeId>) {
        for (i, l) in self.model.layers.iter().enumerate() {
            self.nodes[i].inputs = vec![None; l.inputs.len()];
            self.nodes[i].consumers = vec![Vec::new(); l.outputs.len()];
        }
        for e in &self.model.edges {
            let err = |msg: String| Diagnostic::error(codes::DANGLING_EDGE, msg).at(e.pos);
            let (Some(&from), Some(&to)) = (ids.get(&e.from_layer), ids.get(&e.to_layer)) else {
                let missing = if ids.contains_key(&e.from_layer) {
                    e.to_layer
                } else {
                    e.from_layer
                };
                self.diagnostics.push(err(format!(
                    "edge {}:{} -> {}:{} names layer {missing}, which does not exist",
                    e.from_layer, e.from_port, e.to_layer, e.to_port
                )));
                continue;
            };
            let (src, dst) = (&self.model.layers[from], &self.model.layers[to]);
            let slots = edge_port_slot(src, e, true)
                .and_then(|o| edge_port_slot(dst, e, false).map(|i| (o, i)));
            let (out_slot, in_slot) = match slots {
                Ok(s) => s,
                Err(d) => {
                    self.diagnostics.push(d);
                    continue;
                }
            };
            if let Some(prev) = self.nodes[to].inputs[in_slot] {
                let prev_layer = &self.model.layers[prev.node];
                self.diagnostics.push(
                    Diagnostic::error(
                        codes::BAD_INPUT_WIRING,
                        format!("two edges feed input port {} of layer {}: from layer {} and from layer {}", e.to_port, e.to_layer, prev_layer.id, e.from_layer),
                    )
                    .at(e.pos)
                    .on_layer(dst.layer_ref())
                    .on_port(PortRef { direction: PortDirection::Input, slot: in_slot, port_id: Some(e.to_port) }),
                );
                continue;
            }
            self.nodes[to].inputs[in_slot] = Some(Outlet {
                node: from,
                slot: out_slot,
            });
            self.nodes[from].consumers[out_slot].push((to, in_slot));
        }
    }

    fn check_unfed_inputs(&mut self) {
        for (i, l) in self.model.layers.iter().enumerate() {
            for (slot, p) in l.inputs.iter().enumerate() {
                if self.nodes[i].inputs[slot].is_none() {
                    self.diagnostics.push(
                        Diagnostic::error(
                            codes::BAD_INPUT_WIRING,
                            format!("input port {} of layer {} has no incoming edge", p.id, l.id),
                        )
                        .at(p.pos)
                        .on_layer(l.layer_ref())
                        .on_port(PortRef {
                            direction: PortDirection::Input,
                            slot,
                            port_id: Some(p.id),
                        }),
                    );
                }
            }
        }
    }

    /// Iterative depth-first search from every sink, then every Parameter, in XML order, as
    /// OpenVINO orders a model. A back edge is a cycle: reported once, with the layers on it.
    /// With `note_unused_inputs` (a model, not a body), a Parameter that feeds nothing is a
    /// note.
    fn topological_order(&mut self, note_unused_inputs: bool) {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let n = self.nodes.len();
        let mut mark = vec![Mark::New; n];
        let mut cycle_reported = false;
        let sinks = (0..n).filter(|&i| is_sink(&self.model.layers[i]));
        let roots: Vec<NodeId> = sinks.chain(self.parameters.iter().copied()).collect();
        for root in roots {
            if mark[root] != Mark::New {
                continue;
            }
            // (node, next input slot to visit)
            let mut stack = vec![(root, 0usize)];
            mark[root] = Mark::Open;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let inputs = &self.nodes[node].inputs;
                if *next < inputs.len() {
                    let slot = *next;
                    *next += 1;
                    let Some(src) = inputs[slot] else { continue };
                    match mark[src.node] {
                        Mark::New => {
                            mark[src.node] = Mark::Open;
                            stack.push((src.node, 0));
                        }
                        Mark::Open if !cycle_reported => {
                            cycle_reported = true;
                            let start = stack.iter().position(|&(m, _)| m == src.node).unwrap_or(0);
                            let path: Vec<String> = stack[start..]
                                .iter()
                                .rev()
                                .map(|&(m, _)| self.model.layers[m].id.to_string())
                                .collect();
                            let l = &self.model.layers[src.node];
                            self.diagnostics.push(
                                Diagnostic::error(
                                    codes::CYCLE,
                                    format!(
                                        "the graph has a cycle through layers {} -> {}",
                                        path.join(" -> "),
                                        l.id
                                    ),
                                )
                                .at(l.pos)
                                .on_layer(l.layer_ref()),
                            );
                        }
                        _ => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    self.order.push(node);
                    stack.pop();
                }
            }
        }
        let unreachable: Vec<&Layer> = (0..n)
            .filter(|&i| mark[i] == Mark::New)
            .map(|i| &self.model.layers[i])
            .collect();
        if !unreachable.is_empty() {
            let shown: Vec<String> = unreachable
                .iter()
                .take(10)
                .map(|l| format!("{} \"{}\"", l.id, l.name))
                .collect();
            let more = if unreachable.len() > 10 {
                format!(" and {} more", unreachable.len() - 10)
            } else {
                String::new()
            };
            self.diagnostics.push(
                Diagnostic::note(
                    codes::UNREACHABLE,
                    format!(
                        "{} layer(s) feed no output and are ignored: {}{more}",
                        unreachable.len(),
                        shown.join(", ")
                    ),
                )
                .at(unreachable[0].pos),
            );
        }
        // An input that feeds nothing is still an input (OpenVINO keeps it), but whoever
        // feeds it values should know they change nothing.
        if !note_unused_inputs {
            return;
        }
        for &p in &self.parameters {
            if self.nodes[p].consumers.iter().all(Vec::is_empty) {
                let l = &self.model.layers[p];
                self.diagnostics.push(
                    Diagnostic::note(
                        codes::UNUSED_INPUT,
                        format!(
                            "input \"{}\" feeds no layer: its values are ignored",
                            l.name
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
            }
        }
    }

    /// The name OpenVINO's `get_any_name` gives a model output: the lexicographically smallest
    /// tensor name, else `output_<i>`. Names come from the Result's `output_names` when present
    /// (it replaces the producer's names), else from the producing port's `names`.
    pub fn output_names(&self, result: NodeId) -> Vec<String> {
        let l = self.layer(result);
        let mut names = match l.extra_attr("output_names") {
            Some(a) => irun_ir::split_tensor_names(&a.value),
            None => self.nodes[result]
                .inputs
                .first()
                .copied()
                .flatten()
                .map(|o| self.layer(o.node).outputs[o.slot].names.clone())
                .unwrap_or_default(),
        };
        names.sort();
        names
    }

    /// Tensor names of a model input (the Parameter's output port names).
    pub fn input_names(&self, param: NodeId) -> Vec<String> {
        let mut names = self
            .layer(param)
            .outputs
            .first()
            .map(|p| p.names.clone())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The key an output gets in an output file: the smallest tensor name, else `output_<i>`.
    pub fn output_key(&self, index: usize) -> String {
        self.output_names(self.results[index])
            .into_iter()
            .next()
            .unwrap_or_else(|| format!("output_{index}"))
    }
}
