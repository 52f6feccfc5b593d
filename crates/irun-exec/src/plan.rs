//! The plan: what runs in which order, and how many readers each node output has.

use irun_graph::{Graph, NodeId};

use irun_ops::VariableAccess;

use crate::error::{RunError, RunErrorKind};

/// A state node whose variable the graph did not collect (it collects every ordered one).
fn unknown_variable(layer: u64, id: &str) -> RunError {
    RunError::new(
        RunErrorKind::InvalidModel,
        format!(
            "internal error: layer {layer} uses variable `{id}`, which the graph does not list"
        ),
    )
}

/// Where a step's value comes from.
#[derive(Debug)]
pub enum Source {
    /// Model input `i` (Parameter `i` in XML order).
    Input(usize),
    /// A Const, decoded from the weights once.
    Const,
    /// The node's op.
    Op,
    /// A ReadValue of variable `i` (in `Graph::variables`): the stored value, else the initial
    /// one (its input, or zeros when it has none).
    ReadValue(usize),
    /// An Assign of variable `i`: its input becomes the variable's value when the run succeeds.
    Assign(usize),
}

#[derive(Debug)]
pub struct Step {
    pub node: NodeId,
    pub source: Source,
    /// Flat outlet index of each input slot's producer.
    pub inputs: Vec<usize>,
    /// For a Result, its position among the model outputs.
    pub output_index: Option<usize>,
}

#[derive(Debug)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Number of reads of each outlet by later steps; a value is dropped (or handed over for
    /// in-place reuse) when its count reaches zero.
    pub readers: Vec<u32>,
    pub outlet_count: usize,
    /// First flat outlet index of each node.
    first_outlet: Vec<usize>,
    /// Per variable: whether an Assign writes it (its ReadValue may then hand the stored value
    /// over rather than share it).
    pub written: Vec<bool>,
}

/// What one run executes: the plan's steps less the initial-value subgraphs of variables that
/// hold a value (OpenVINO computes those only on the first run and after a reset).
#[derive(Debug)]
pub struct Schedule {
    /// Per step, whether it runs.
    pub runs: Vec<bool>,
    /// Reads of each outlet by the steps that run.
    pub readers: Vec<u32>,
}

impl Plan {
    /// Plans the graph's order. Every node in it must have an op with a kernel (Parameter and
    /// Const are served by the executor); unsupported layers are listed together.
    pub fn build(g: &Graph) -> Result<Plan, RunError> {
        let mut first_outlet = Vec::with_capacity(g.nodes.len());
        let mut outlet_count = 0;
        for l in &g.model.layers {
            first_outlet.push(outlet_count);
            outlet_count += l.outputs.len();
        }
        let mut readers = vec![0u32; outlet_count];
        let mut steps = Vec::with_capacity(g.order.len());
        let mut unsupported = Vec::new();
        for &n in &g.order {
            let layer = g.layer(n);
            let variable = g.ops[n].as_ref().and_then(|op| op.variable());
            let variable_index = |id: &str| g.variables.iter().position(|v| v.id == id);
            let source = if let Some(i) = g.parameters.iter().position(|&p| p == n) {
                Source::Input(i)
            } else if let Some(VariableAccess::Read(id)) = variable {
                Source::ReadValue(variable_index(id).ok_or_else(|| unknown_variable(layer.id, id))?)
            } else if let Some(VariableAccess::Write(id)) = variable {
                Source::Assign(variable_index(id).ok_or_else(|| unknown_variable(layer.id, id))?)
            } else if layer.type_name == "Const" {
                Source::Const
            } else if g.ops[n].is_some() {
                Source::Op
            } else {
                unsupported.push(format!(
                    "{} ({}-{})",
                    layer.id, layer.type_name, layer.version
                ));
                continue;
            };
            let inputs: Vec<usize> = g.nodes[n]
                .inputs
                .iter()
                .map(|o| o.map(|o| first_outlet[o.node] + o.slot))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    RunError::new(
                        RunErrorKind::InvalidModel,
                        format!("layer {} has an input no edge feeds", layer.id),
                    )
                })?;
            for &o in &inputs {
                readers[o] += 1;
            }
            steps.push(Step {
                node: n,
                source,
                inputs,
                output_index: g.results.iter().position(|&r| r == n),
            });
        }
        if !unsupported.is_empty() {
            return Err(RunError::new(
                RunErrorKind::InvalidModel,
                format!(
                    "irun cannot run {} layer(s) whose op it does not support: {}",
                    unsupported.len(),
                    unsupported.join(", ")
                ),
            ));
        }
        let mut written = vec![false; g.variables.len()];
        for step in &steps {
            if let Source::Assign(v) = step.source {
                written[v] = true;
            }
        }
        Ok(Plan {
            steps,
            readers,
            outlet_count,
            first_outlet,
            written,
        })
    }

    /// The steps a run needs when the variables marked in `holds` have a stored value: their
    /// ReadValues do not read their initial value, and steps that only fed those (a Broadcast
    /// of zeros the size of the KV cache) do not run. Model inputs, Results and Assigns always
    /// run.
    pub fn schedule(&self, holds: &[bool]) -> Schedule {
        if !holds.iter().any(|&h| h) {
            return Schedule {
                runs: vec![true; self.steps.len()],
                readers: self.readers.clone(),
            };
        }
        self.live(
            |_| false,
            |step| matches!(step.source, Source::ReadValue(v) if holds[v]),
        )
    }

    /// The steps that must run, walked last to first: model inputs, Results, Assigns and the
    /// steps `always` names, and every step a running one reads, except through the inputs
    /// of a step `no_inputs` names; with the reader counts of the running steps.
    fn live(&self, always: impl Fn(&Step) -> bool, no_inputs: impl Fn(&Step) -> bool) -> Schedule {
        let mut runs = vec![false; self.steps.len()];
        let mut readers = vec![0u32; self.outlet_count];
        for (i, step) in self.steps.iter().enumerate().rev() {
            let sink = step.output_index.is_some()
                || matches!(step.source, Source::Input(_) | Source::Assign(_))
                || always(step);
            if !sink && readers[self.outlets(step.node)].iter().all(|&r| r == 0) {
                continue;
            }
            runs[i] = true;
            if no_inputs(step) {
                continue;
            }
            for &o in &step.inputs {
                readers[o] += 1;
            }
        }
        Schedule { runs, readers }
    }

    /// Keeps only the input slots `keep` of `node`'s step (a kernel that no longer reads the
    /// others); their producers lose a reader.
    pub fn keep_inputs(&mut self, node: NodeId, keep: &[usize]) {
        let Some(step) = self.steps.iter_mut().find(|s| s.node == node) else {
            return;
        };
        let mut kept = Vec::with_capacity(keep.len());
        for (slot, &o) in step.inputs.iter().enumerate() {
            if keep.contains(&slot) {
                kept.push(o);
            } else {
                self.readers[o] -= 1;
            }
        }
        step.inputs = kept;
    }

    /// Whether the step that produces `outlet` runs before `node`'s.
    pub fn runs_before(&self, outlet: usize, node: NodeId) -> bool {
        let at = self.steps.iter().position(|s| s.node == node);
        let producer = self
            .steps
            .iter()
            .position(|s| self.outlets(s.node).contains(&outlet));
        matches!((producer, at), (Some(p), Some(at)) if p < at)
    }

    /// Has `node`'s step read `outlet` through one more input slot, last (its producer
    /// must run before: [`Plan::runs_before`]).
    pub fn add_input(&mut self, node: NodeId, outlet: usize) {
        debug_assert!(self.runs_before(outlet, node));
        if let Some(step) = self.steps.iter_mut().find(|s| s.node == node) {
            step.inputs.push(outlet);
            self.readers[outlet] += 1;
        }
    }

    /// Has `node`'s step read `outlet` through input `slot` instead of what it read.
    pub fn rewire(&mut self, node: NodeId, slot: usize, outlet: usize) {
        let Some(step) = self.steps.iter_mut().find(|s| s.node == node) else {
            return;
        };
        let Some(o) = step.inputs.get_mut(slot) else {
            return;
        };
        self.readers[*o] -= 1;
        self.readers[outlet] += 1;
        *o = outlet;
    }

    /// Makes the steps of `nodes` (one-output ops) read nothing and take their value as run
    /// input `first_input + j` instead (the `j`-th of `nodes`), then drops the steps left
    /// without readers: a body whose loop-invariant part ran before its loop (`hoist.rs`).
    pub fn give(&mut self, nodes: &[NodeId], first_input: usize) {
        for (j, &node) in nodes.iter().enumerate() {
            let Some(step) = self.steps.iter_mut().find(|s| s.node == node) else {
                continue;
            };
            for &o in &step.inputs {
                self.readers[o] -= 1;
            }
            step.inputs.clear();
            step.source = Source::Input(first_input + j);
        }
        self.prune();
    }

    /// Drops the steps whose outputs nobody reads (model inputs, Results and state nodes
    /// stay), so that whole subgraphs left without readers go.
    pub fn prune(&mut self) {
        let live = self.live(
            |step| matches!(step.source, Source::ReadValue(_)),
            |_| false,
        );
        let mut runs = live.runs.into_iter();
        self.steps
            .retain(|_| runs.next().expect("one flag per step"));
        self.readers = live.readers;
    }

    /// The outlets of `node`'s outputs (none for a Result).
    pub fn outlets(&self, node: NodeId) -> std::ops::Range<usize> {
        let end = self.first_outlet.get(node + 1).copied();
        self.first_outlet[node]..end.unwrap_or(self.outlet_count)
    }

    pub fn outlet(&self, node: NodeId, slot: usize) -> usize {
        self.first_outlet[node] + slot
    }
}
