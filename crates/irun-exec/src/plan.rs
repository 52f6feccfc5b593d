//! The plan: what runs in which order, and how many readers each node output has.

use irun_graph::{Graph, NodeId};

use crate::error::{RunError, RunErrorKind};

/// Where a step's value comes from.
#[derive(Debug)]
pub enum Source {
    /// Model input `i` (Parameter `i` in XML order).
    Input(usize),
    /// A Const, decoded from the weights once.
    Const,
    /// The node's op.
    Op,
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
            let source = if let Some(i) = g.parameters.iter().position(|&p| p == n) {
                Source::Input(i)
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
        Ok(Plan {
            steps,
            readers,
            outlet_count,
            first_outlet,
        })
    }

    pub fn outlet(&self, node: NodeId, slot: usize) -> usize {
        self.first_outlet[node] + slot
    }
}
