//! The model summary behind `irun info`: version, op histogram, inputs, outputs, state
//! variables, constants.
//! Reads only the XML and the weights file's length; never decodes a weight.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{Graph, NodeId};
use irun_ir::Port;
use irun_ops::Fact;
use irun_tensor::ElementType;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct ModelInfo {
    pub ir_version: u32,
    pub name: Option<String>,
    /// Every `<layer>` in the file.
    pub layers: usize,
    /// Reachable layers by `Type-opsetN`, as OpenVINO's `get_ordered_ops` would count them:
    /// a Loop, TensorIterator or If counts once, whatever its bodies hold.
    pub ops: BTreeMap<String, usize>,
    /// The bodies of Loop, TensorIterator and If layers, nested ones included (outer first),
    /// with the layers each holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bodies: Vec<BodySummary>,
    pub inputs: Vec<TensorInfo>,
    pub outputs: Vec<TensorInfo>,
    /// State variables (ReadValue/Assign pairs), as `--state-in`/`--state-out` key them.
    pub variables: Vec<VariableSummary>,
    pub constants: ConstantsInfo,
}

#[derive(Debug, Serialize)]
pub struct BodySummary {
    /// The path to the body: `loop/body`, `loop/body/branch/then_body` (layer names).
    pub path: String,
    /// Its reachable layers by `Type-opsetN`.
    pub ops: BTreeMap<String, usize>,
    /// Every `<layer>` in it (nested bodies' layers not included).
    pub layers: usize,
}

#[derive(Debug, Serialize)]
pub struct VariableSummary {
    pub id: String,
    pub shape: String,
    pub element_type: String,
}

#[derive(Debug, Serialize)]
pub struct TensorInfo {
    /// The key in input/output files: the smallest tensor name, else the layer name (inputs) or
    /// `output_<i>` (outputs).
    pub key: String,
    pub names: Vec<String>,
    pub layer: String,
    pub shape: String,
    pub element_type: String,
}

#[derive(Debug, Serialize)]
pub struct ConstantsInfo {
    /// Consts of the model and of its bodies.
    pub count: usize,
    /// Sum of the Consts' `size` attributes (shared blobs counted once per Const).
    pub bytes: u64,
    /// Length of the weights file (0 when there is none).
    pub weights_file_bytes: u64,
}

/// `Type-opsetN` of a layer, as the IR spells it.
pub fn op_key(type_name: &str, version: &str) -> String {
    if version.is_empty() {
        type_name.to_string()
    } else {
        format!("{type_name}-{version}")
    }
}

/// Shape and element type of a model input or output: the inferred fact where inference knows
/// it, else what the port declares (for layers whose op is unsupported or invalid).
fn describe(fact: Option<&Fact>, port: Option<&Port>) -> (String, String) {
    let shape = match fact {
        Some(f) if f.shape.rank().is_some() || port.is_none_or(|p| p.dims.is_empty()) => {
            f.shape.to_string()
        }
        _ => port.map_or("[...]".into(), Port::declared_shape),
    };
    let ty = match fact {
        Some(f) if f.ty != ElementType::Dynamic => Some(f.ty),
        _ => port.and_then(|p| p.precision),
    };
    (shape, ty.map_or("?".to_string(), |t| t.name().to_string()))
}

/// Reachable layers by `Type-opsetN`.
fn op_counts(g: &Graph) -> BTreeMap<String, usize> {
    let mut ops = BTreeMap::new();
    for &n in &g.order {
        let l = g.layer(n);
        *ops.entry(op_key(&l.type_name, &l.version)).or_insert(0) += 1;
    }
    ops
}

/// Every body under `g`, depth first, each with its path from the model.
fn collect_bodies(g: &Graph, prefix: &str, out: &mut Vec<(String, Arc<Graph>)>) {
    for (n, flow) in g.flows.iter().enumerate() {
        let Some(flow) = flow else { continue };
        for body in &flow.bodies {
            let path = format!("{prefix}{}/{}", g.layer(n).name, body.role);
            out.push((path.clone(), body.graph.clone()));
            collect_bodies(&body.graph, &format!("{path}/"), out);
        }
    }
}

fn parameter_info(g: &Graph, n: NodeId) -> TensorInfo {
    let l = g.layer(n);
    let names = g.input_names(n);
    let (shape, element_type) = describe(g.facts[n].first(), l.outputs.first());
    TensorInfo {
        key: names.first().cloned().unwrap_or_else(|| l.name.clone()),
        names,
        layer: l.name.clone(),
        shape,
        element_type,
    }
}

fn result_info(g: &Graph, index: usize) -> TensorInfo {
    let n = g.results[index];
    let l = g.layer(n);
    let (shape, element_type) = describe(g.facts[n].first(), l.inputs.first());
    TensorInfo {
        key: g.output_key(index),
        names: g.output_names(n),
        layer: l.name.clone(),
        shape,
        element_type,
    }
}

impl ModelInfo {
    pub fn of(g: &Graph) -> ModelInfo {
        let mut bodies = Vec::new();
        collect_bodies(g, "", &mut bodies);
        let graphs = std::iter::once(g).chain(bodies.iter().map(|(_, b)| &**b));
        let consts = graphs.flat_map(|g| g.model.layers.iter().filter(|l| l.type_name == "Const"));
        let (count, bytes) = consts.fold((0, 0u64), |(c, b), l| {
            let size = l
                .data_attr("size")
                .and_then(|a| irun_ir::parse_uint(&a.value))
                .unwrap_or(0);
            (c + 1, b.saturating_add(size))
        });
        ModelInfo {
            ir_version: g.model.version,
            name: g.model.name.clone(),
            layers: g.model.layers.len(),
            ops: op_counts(g),
            bodies: bodies
                .iter()
                .map(|(path, b)| BodySummary {
                    path: path.clone(),
                    ops: op_counts(b),
                    layers: b.model.layers.len(),
                })
                .collect(),
            inputs: g.parameters.iter().map(|&n| parameter_info(g, n)).collect(),
            outputs: (0..g.results.len()).map(|i| result_info(g, i)).collect(),
            variables: g
                .variables
                .iter()
                .map(|v| {
                    let (shape, element_type) = match v.read.or(v.write) {
                        Some(n) => describe(g.facts[n].first(), g.layer(n).outputs.first()),
                        None => ("?".into(), "?".into()),
                    };
                    VariableSummary {
                        id: v.id.clone(),
                        shape,
                        element_type,
                    }
                })
                .collect(),
            constants: ConstantsInfo {
                count,
                bytes,
                weights_file_bytes: g.model.weights.len(),
            },
        }
    }

    /// The human-readable form.
    pub fn render(&self, file: &str) -> String {
        let mut s = String::new();
        let name = self
            .name
            .as_deref()
            .map(|n| format!(" \"{n}\""))
            .unwrap_or_default();
        s.push_str(&format!(
            "{file}: OpenVINO IR v{}{name}, {} layers\n",
            self.ir_version, self.layers
        ));
        s.push_str("ops:\n");
        for (k, v) in &self.ops {
            s.push_str(&format!("  {v:>6}  {k}\n"));
        }
        for b in &self.bodies {
            s.push_str(&format!("body {} ({} layers):\n", b.path, b.layers));
            for (k, v) in &b.ops {
                s.push_str(&format!("  {v:>6}  {k}\n"));
            }
        }
        for (title, list) in [("inputs", &self.inputs), ("outputs", &self.outputs)] {
            s.push_str(&format!("{title}:\n"));
            for t in list {
                let aliases = if t.names.len() > 1 {
                    format!(" (names: {})", t.names.join(", "))
                } else {
                    String::new()
                };
                s.push_str(&format!(
                    "  {}  {} {}{aliases}\n",
                    t.key, t.element_type, t.shape
                ));
            }
        }
        if !self.variables.is_empty() {
            s.push_str("variables:\n");
            for v in &self.variables {
                s.push_str(&format!("  {}  {} {}\n", v.id, v.element_type, v.shape));
            }
        }
        s.push_str(&format!(
            "constants: {} ({} bytes); weights file: {} bytes\n",
            self.constants.count, self.constants.bytes, self.constants.weights_file_bytes
        ));
        s
    }
}
