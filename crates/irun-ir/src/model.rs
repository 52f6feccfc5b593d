//! The IR as written: layers, ports, edges, attributes and rt_info, each with its position.

use std::path::PathBuf;

use irun_tensor::ElementType;

use crate::diag::{Diagnostic, LayerRef, Pos};
pub use crate::dom::Attr;
use crate::weights::{ConstInfo, Weights};

/// A model read from `model.xml` (+ `model.bin`). Holds no op semantics: `type`/`version` are
/// strings and `<data>` is an ordered string map.
#[derive(Clone, Debug)]
pub struct IrModel {
    pub xml_path: PathBuf,
    /// IR version: 10 or 11.
    pub version: u32,
    /// The `<net name>`.
    pub name: Option<String>,
    pub layers: Vec<Layer>,
    pub edges: Vec<Edge>,
    /// Net-level `<rt_info>` (or, when absent, the legacy `<meta_data>`/
    /// `<quantization_parameters>` blocks, as OpenVINO reads them).
    pub rt_info: Vec<RtNode>,
    pub weights: Weights,
    /// Problems found while reading that did not stop it (bad dims, bad Const references...).
    pub diagnostics: Vec<Diagnostic>,
}

/// One `<layer>`.
#[derive(Clone, Debug)]
pub struct Layer {
    pub id: u64,
    pub name: String,
    pub type_name: String,
    /// The `version` attribute (`opset12`), empty when absent.
    pub version: String,
    /// The `<data>` attributes, in file order; `None` when there is no `<data>` element.
    pub data: Option<DataAttrs>,
    /// Other attributes of the `<layer>` element itself (e.g. Result's `output_names`).
    pub extra_attrs: Vec<Attr>,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    pub rt_info: Vec<RtNode>,
    pub pos: Pos,
    /// For `type="Const"` layers whose weight reference is valid: where the value lives.
    pub constant: Option<ConstInfo>,
    /// The body nets of Loop and TensorIterator (`<body>`) and If (`<then_body>`,
    /// `<else_body>`), in file order, each with its port map.
    pub bodies: Vec<Body>,
}

impl Layer {
    pub fn layer_ref(&self) -> LayerRef {
        LayerRef {
            id: self.id,
            name: self.name.clone(),
            type_name: self.type_name.clone(),
            version: self.version.clone(),
        }
    }

    /// A `<data>` attribute value.
    pub fn data_attr(&self, name: &str) -> Option<&Attr> {
        self.data.as_ref()?.attrs.iter().find(|a| a.name == name)
    }

    pub fn extra_attr(&self, name: &str) -> Option<&Attr> {
        self.extra_attrs.iter().find(|a| a.name == name)
    }

    /// Slot of the input port with this id (its position in `<input>`).
    pub fn input_slot(&self, port_id: u64) -> Option<usize> {
        self.inputs.iter().position(|p| p.id == port_id)
    }

    /// Slot of the output port with this id (its position in `<output>`).
    pub fn output_slot(&self, port_id: u64) -> Option<usize> {
        self.outputs.iter().position(|p| p.id == port_id)
    }
}

/// A body net of a Loop, TensorIterator or If layer, with the port map that ties it to the
/// layer's ports. Its layers and edges are a graph of their own (ids local to the body); its
/// Consts read the model's one `.bin`.
#[derive(Clone, Debug)]
pub struct Body {
    /// `body`, `then_body` or `else_body`.
    pub role: String,
    pub layers: Vec<Layer>,
    pub edges: Vec<Edge>,
    /// `<input>` entries of the port map (`<port_map>`, `<then_port_map>`, `<else_port_map>`).
    pub inputs: Vec<PortMapEntry>,
    /// `<output>` entries of the port map.
    pub outputs: Vec<PortMapEntry>,
    /// `<back_edges>`: a body Result whose value feeds a body Parameter next iteration.
    pub back_edges: Vec<BackEdge>,
    pub pos: Pos,
    /// Where the port map was, when there was one.
    pub port_map_pos: Option<Pos>,
}

/// One `<input>` or `<output>` of a port map, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortMapEntry {
    /// The outer layer's input index (inputs) or output order key (outputs); -1 for none.
    pub external_port_id: i64,
    /// The body Parameter (inputs) or Result (outputs) layer id.
    pub internal_layer_id: u64,
    /// Present for sliced inputs and concatenated outputs.
    pub axis: Option<i64>,
    pub start: i64,
    pub end: i64,
    pub stride: i64,
    pub part_size: i64,
    /// `current_iteration` or `execution_condition` (Loop's special ports).
    pub purpose: Option<String>,
    pub pos: Pos,
}

/// One `<back_edges><edge from-layer to-layer/>`: body Result -> body Parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackEdge {
    pub from_layer: u64,
    pub to_layer: u64,
    pub pos: Pos,
}

/// The `<data>` element of a layer.
#[derive(Clone, Debug)]
pub struct DataAttrs {
    pub attrs: Vec<Attr>,
    pub pos: Pos,
}

/// One `<port>` of `<input>` or `<output>`.
#[derive(Clone, Debug)]
pub struct Port {
    pub id: u64,
    /// The declared precision; `None` when absent.
    pub precision: Option<ElementType>,
    /// Tensor names (`names` attribute, split on unescaped commas, `\,` unescaped).
    pub names: Vec<String>,
    /// Declared dims: `-1` is dynamic. No `<dim>` means a scalar or a dynamic rank.
    pub dims: Vec<i64>,
    pub rt_info: Vec<RtNode>,
    pub pos: Pos,
}

impl Port {
    /// The declared dims as `[2,?,4]` (`-1` is `?`; no dims is `[]`, a scalar or dynamic rank).
    pub fn declared_shape(&self) -> String {
        let d: Vec<String> = self
            .dims
            .iter()
            .map(|&d| {
                if d < 0 {
                    "?".to_string()
                } else {
                    d.to_string()
                }
            })
            .collect();
        format!("[{}]", d.join(","))
    }
}

/// One `<edge>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from_layer: u64,
    pub from_port: u64,
    pub to_layer: u64,
    pub to_port: u64,
    pub pos: Pos,
}

/// An rt_info element, kept as written: `<attribute name="layout" version="0" layout="[N,C]"/>`,
/// `<info name="k" value="v"/>`, `<model_info><layout value="NCHW"/></model_info>`.
#[derive(Clone, Debug)]
pub struct RtNode {
    pub tag: String,
    pub attrs: Vec<Attr>,
    pub children: Vec<RtNode>,
    pub pos: Pos,
}

impl RtNode {
    /// The key of a net rt_info entry: the `name` attribute of `<info>`/`<attribute>`, else the tag.
    pub fn key(&self) -> &str {
        match self.tag.as_str() {
            "info" | "attribute" => self
                .attrs
                .iter()
                .find(|a| a.name == "name")
                .map_or(&self.tag, |a| &a.value),
            _ => &self.tag,
        }
    }

    pub fn value(&self) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.name == "value")
            .map(|a| a.value.as_str())
    }
}

/// Splits a port `names` attribute on commas not escaped as `\,`.
pub fn split_tensor_names(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => names.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    names.push(cur);
    names
        .into_iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_names_honour_escaped_commas() {
        assert_eq!(
            split_tensor_names("alias\\,with\\,comma,p_interval"),
            vec!["alias,with,comma", "p_interval"]
        );
        assert_eq!(split_tensor_names(""), Vec::<String>::new());
        assert_eq!(split_tensor_names("a, b"), vec!["a", "b"]);
    }
}
