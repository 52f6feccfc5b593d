//! Interprets the positioned element tree as an IR model.
//!
//! Fatal problems (unreadable file, not XML, malformed XML, not an IR v10/v11 `<net>`) stop
//! reading with one diagnostic. Everything else (a bad `<dim>`, a bad precision, a Const whose
//! bytes are outside the `.bin`, a missing id) is collected in `IrModel::diagnostics` and the
//! offending item is skipped or marked, so that one run reports every problem.

use std::io::Read;
use std::path::{Path, PathBuf};

use irun_tensor::ElementType;

use crate::diag::{codes, BodyRef, Diagnostic, Pos, Severity};
use crate::dom::{self, Attr, Element};
use crate::model::{
    split_tensor_names, BackEdge, Body, DataAttrs, Edge, IrModel, Layer, Port, PortMapEntry, RtNode,
};
use crate::weights::{check_const, parse_const_shape, Weights};

/// XML files larger than this are refused (the largest real IR XMLs are ~100 MB); this is also
/// what keeps an endless input from hanging the reader.
pub const MAX_XML_BYTES: u64 = 1 << 30;

/// The weights path OpenVINO uses by default: the XML path with the extension `.bin`.
pub fn default_bin_path(xml: &Path) -> PathBuf {
    xml.with_extension("bin")
}

impl IrModel {
    /// Reads `xml_path` and its default weights file (`.bin` beside it).
    pub fn open(xml_path: &Path) -> Result<IrModel, Diagnostic> {
        IrModel::open_with_weights(xml_path, &default_bin_path(xml_path))
    }

    pub fn open_with_weights(xml_path: &Path, bin_path: &Path) -> Result<IrModel, Diagnostic> {
        let src = read_xml_file(xml_path)?;
        IrModel::parse(&src, xml_path, Weights::open(bin_path))
    }

    /// Parses XML text with the given weights.
    pub fn parse(src: &str, xml_path: &Path, weights: Weights) -> Result<IrModel, Diagnostic> {
        let mut root = dom::parse(src)?;
        let mut r = Reader { diags: Vec::new() };
        let version = r.net_header(&root)?;
        let mut model = IrModel {
            xml_path: xml_path.to_path_buf(),
            version,
            name: root.attr("name").map(|a| a.value.clone()),
            layers: Vec::new(),
            edges: Vec::new(),
            rt_info: Vec::new(),
            weights,
            diagnostics: Vec::new(),
        };
        let has_rt_info = root.children.iter().any(|c| c.name == "rt_info");
        // The tree is consumed as it is read: attribute strings move into the model.
        for child in std::mem::take(&mut root.children) {
            match &*child.name {
                "layers" | "edges" => r.net_part(
                    child,
                    version,
                    &model.weights,
                    &mut model.layers,
                    &mut model.edges,
                ),
                "rt_info" => model
                    .rt_info
                    .extend(child.children.into_iter().map(rt_node)),
                // Legacy blocks are read only when there is no <rt_info>, as OpenVINO does.
                "meta_data" | "quantization_parameters" if !has_rt_info => {
                    model.rt_info.push(rt_node(child))
                }
                "meta_data" | "quantization_parameters" | "pre-process" | "statistics" => {}
                _ => r.unknown(&child, "<net>"),
            }
        }
        model.diagnostics = r.diags;
        Ok(model)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Reads an XML file, refusing non-files, non-XML content (sniffed from the first bytes, so
/// `/dev/zero` or an ONNX protobuf fails at once), files over [`MAX_XML_BYTES`] and bad UTF-8.
pub fn read_xml_file(path: &Path) -> Result<String, Diagnostic> {
    let unreadable = |msg: String| Diagnostic::error(codes::UNREADABLE, msg);
    let file = std::fs::File::open(path)
        .map_err(|e| unreadable(format!("cannot open {}: {e}", path.display())))?;
    let meta = file
        .metadata()
        .map_err(|e| unreadable(format!("cannot stat {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(unreadable(format!(
            "{} is a directory, not an IR .xml file",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_XML_BYTES) as usize + 1);
    let mut limited = file.take(MAX_XML_BYTES + 1);
    let mut head = [0u8; 512];
    let n = read_up_to(&mut limited, &mut head)
        .map_err(|e| unreadable(format!("cannot read {}: {e}", path.display())))?;
    bytes.extend_from_slice(&head[..n]);
    sniff_xml(&bytes, path)?;
    limited
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(format!("cannot read {}: {e}", path.display())))?;
    xml_text(bytes, path)
}

/// The text of an IR `.xml` held in memory (`path` names it in messages): the checks of
/// [`read_xml_file`] on its content, the byte-order mark removed.
pub fn xml_text(mut bytes: Vec<u8>, path: &Path) -> Result<String, Diagnostic> {
    sniff_xml(&bytes[..bytes.len().min(512)], path)?;
    if bytes.len() as u64 > MAX_XML_BYTES {
        return Err(Diagnostic::error(
            codes::NOT_XML,
            format!(
                "{} is larger than {} bytes; irun refuses XML files that large",
                path.display(),
                MAX_XML_BYTES
            ),
        ));
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Diagnostic::error(codes::MALFORMED_XML, format!("invalid UTF-8 at byte {at}"))
            .at(dom::pos_in_bytes(e.as_bytes(), at))
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..])? {
            0 => break,
            k => filled += k,
        }
    }
    Ok(filled)
}

/// A `<layer>` element as its identifying attributes read, for messages about a layer that
/// could not be read (whose `id` may be missing or invalid): `<layer id="3" name="x" type="Add">`.
fn describe_layer(e: &Element) -> String {
    let mut out = String::from("<layer");
    for key in ["id", "name", "type", "version"] {
        if let Some(a) = e.attr(key) {
            out.push_str(&format!(" {key}=\"{}\"", a.value));
        }
    }
    out.push('>');
    out
}

fn sniff_xml(head: &[u8], path: &Path) -> Result<(), Diagnostic> {
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = body.iter().copied().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'<') => Ok(()),
        None if head.len() < 512 => Err(Diagnostic::error(
            codes::NOT_XML,
            format!("{} is empty", path.display()),
        )),
        _ => {
            let shown: Vec<String> = body.iter().take(8).map(|b| format!("{b:02x}")).collect();
            Err(Diagnostic::error(
                codes::NOT_XML,
                format!(
                    "{} is not an XML file (it starts with bytes {}); irun reads OpenVINO IR .xml files",
                    path.display(),
                    shown.join(" ")
                ),
            )
            .at(Pos { line: 1, col: 1 }))
        }
    }
}

fn rt_node(e: Element) -> RtNode {
    RtNode {
        tag: e.name.into_owned(),
        attrs: e.attrs,
        children: e.children.into_iter().map(rt_node).collect(),
        pos: e.pos,
    }
}

struct Reader {
    diags: Vec<Diagnostic>,
}

/// The port map, back edges and body elements of a layer, gathered before they are paired.
#[derive(Default)]
struct BodyParts {
    bodies: Vec<Body>,
    /// (`port_map`, `then_port_map` or `else_port_map`; entries; position).
    port_maps: Vec<(String, Vec<PortMapEntry>, Vec<PortMapEntry>, Pos)>,
    back_edges: Vec<BackEdge>,
}

impl Reader {
    /// A `<layers>` or `<edges>` element of a net (the model's or a body's).
    fn net_part(
        &mut self,
        part: Element,
        version: u32,
        weights: &Weights,
        layers: &mut Vec<Layer>,
        edges: &mut Vec<Edge>,
    ) {
        if part.name == "layers" {
            layers.reserve(part.children.len());
            for l in part.children {
                if l.name != "layer" {
                    self.unknown(&l, "<layers>");
                } else if let Some(layer) = self.layer(l, version, weights) {
                    layers.push(layer);
                }
            }
        } else {
            edges.reserve(part.children.len());
            for e in &part.children {
                if e.name != "edge" {
                    self.unknown(e, "<edges>");
                } else if let Some(edge) = self.edge(e) {
                    edges.push(edge);
                }
            }
        }
    }

    /// A `<body>`, `<then_body>` or `<else_body>`: a net of its own, read with a reader whose
    /// diagnostics are placed inside the layer's body.
    fn body(&mut self, e: Element, version: u32, weights: &Weights, owner: &Layer) -> Body {
        let mut inner = Reader { diags: Vec::new() };
        let mut body = Body {
            role: e.name.to_string(),
            layers: Vec::new(),
            edges: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            back_edges: Vec::new(),
            pos: e.pos,
            port_map_pos: None,
        };
        for c in e.children {
            match &*c.name {
                "layers" | "edges" => {
                    inner.net_part(c, version, weights, &mut body.layers, &mut body.edges)
                }
                "rt_info" => {}
                _ => inner.unknown(&c, &format!("<{}>", body.role)),
            }
        }
        let at = BodyRef {
            layer: owner.layer_ref(),
            body: body.role.clone(),
        };
        self.diags
            .extend(inner.diags.into_iter().map(|d| d.inside_body(at.clone())));
        body
    }

    /// A `<port_map>` (or `<then_port_map>`, `<else_port_map>`): its `<input>` and `<output>`
    /// entries.
    fn port_map(&mut self, e: &Element, owner: &Layer) -> (Vec<PortMapEntry>, Vec<PortMapEntry>) {
        let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
        for c in &e.children {
            let list = match &*c.name {
                "input" => &mut inputs,
                "output" => &mut outputs,
                _ => {
                    self.unknown(c, &format!("<{}>", e.name));
                    continue;
                }
            };
            if let Some(entry) = self.port_map_entry(c, owner) {
                list.push(entry);
            }
        }
        (inputs, outputs)
    }

    /// One `<input>`/`<output>` of a port map: `external_port_id` and `internal_layer_id`
    /// required, `axis` optional, `start`/`end`/`stride`/`part_size` defaulting to 0/-1/1/1.
    fn port_map_entry(&mut self, e: &Element, owner: &Layer) -> Option<PortMapEntry> {
        let what = format!("port map <{}>", e.name);
        // An integer attribute: `Ok(None)` when absent, `Err` (reported) when not an integer.
        let mut int = |name: &str| -> Result<Option<i64>, ()> {
            let Some(a) = e.attr(name) else {
                return Ok(None);
            };
            a.value.trim().parse::<i64>().map(Some).map_err(|_| {
                self.push(
                    Diagnostic::error(
                        codes::BAD_ATTRIBUTE,
                        format!("`{name}=\"{}\"` of {what} is not an integer", a.value),
                    )
                    .at(a.pos)
                    .on_layer(owner.layer_ref()),
                )
            })
        };
        let values = [
            int("external_port_id"),
            int("axis"),
            int("start"),
            int("end"),
            int("stride"),
            int("part_size"),
        ];
        if values[0] == Ok(None) {
            self.push(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!("{what} has no `external_port_id`"),
                )
                .at(e.pos)
                .on_layer(owner.layer_ref()),
            );
        }
        let internal = self.uint_attr(e, "internal_layer_id", &what);
        let [Ok(external), Ok(axis), Ok(start), Ok(end), Ok(stride), Ok(part_size)] = values else {
            return None;
        };
        Some(PortMapEntry {
            external_port_id: external?,
            internal_layer_id: internal?,
            axis,
            start: start.unwrap_or(0),
            end: end.unwrap_or(-1),
            stride: stride.unwrap_or(1),
            part_size: part_size.unwrap_or(1),
            purpose: e.attr("purpose").map(|a| a.value.clone()),
            pos: e.pos,
        })
    }

    fn back_edges(&mut self, e: &Element) -> Vec<BackEdge> {
        let mut out = Vec::new();
        for c in &e.children {
            if c.name != "edge" {
                self.unknown(c, "<back_edges>");
                continue;
            }
            let from = self.uint_attr(c, "from-layer", "back edge");
            let to = self.uint_attr(c, "to-layer", "back edge");
            if let (Some(from_layer), Some(to_layer)) = (from, to) {
                out.push(BackEdge {
                    from_layer,
                    to_layer,
                    pos: c.pos,
                });
            }
        }
        out
    }

    /// Pairs each body with its port map (`body` with `port_map` and the back edges,
    /// `then_body` with `then_port_map`, `else_body` with `else_port_map`); a body without
    /// its map, or a map or back edges without their body, is an error.
    fn pair_bodies(&mut self, layer: &mut Layer, mut parts: BodyParts) {
        let map_of = |role: &str| match role {
            "then_body" => "then_port_map",
            "else_body" => "else_port_map",
            _ => "port_map",
        };
        for mut body in parts.bodies {
            let wanted = map_of(&body.role);
            match parts.port_maps.iter().position(|(name, ..)| name == wanted) {
                Some(i) => {
                    let (_, inputs, outputs, pos) = parts.port_maps.remove(i);
                    body.inputs = inputs;
                    body.outputs = outputs;
                    body.port_map_pos = Some(pos);
                }
                None => self.push(
                    Diagnostic::error(
                        codes::BAD_ATTRIBUTE,
                        format!(
                            "<{}> has no <{wanted}> to tie it to the layer's ports",
                            body.role
                        ),
                    )
                    .at(body.pos)
                    .on_layer(layer.layer_ref()),
                ),
            }
            if body.role == "body" {
                body.back_edges = std::mem::take(&mut parts.back_edges);
            }
            layer.bodies.push(body);
        }
        for (name, _, _, pos) in parts.port_maps {
            self.push(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!("<{name}> has no body to map (a <port_map> goes with a <body>, <then_port_map> with <then_body>, <else_port_map> with <else_body>)"),
                )
                .at(pos)
                .on_layer(layer.layer_ref()),
            );
        }
        if let Some(e) = parts.back_edges.first() {
            self.push(
                Diagnostic::error(codes::BAD_ATTRIBUTE, "<back_edges> without a <body>")
                    .at(e.pos)
                    .on_layer(layer.layer_ref()),
            );
        }
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn unknown(&mut self, e: &Element, parent: &str) {
        self.push(
            Diagnostic::new(
                Severity::Warning,
                codes::UNKNOWN_ELEMENT,
                format!("unknown element <{}> in {parent} is ignored", e.name),
            )
            .at(e.pos),
        );
    }

    fn net_header(&mut self, root: &Element) -> Result<u32, Diagnostic> {
        if !root.name.eq_ignore_ascii_case("net") {
            return Err(Diagnostic::error(
                codes::NOT_IR,
                format!(
                    "the root element is <{}>, not <net>: this is not an OpenVINO IR file",
                    root.name
                ),
            )
            .at(root.pos));
        }
        let v = root.attr("version").ok_or_else(|| {
            Diagnostic::error(codes::NOT_IR, "<net> has no `version` attribute").at(root.pos)
        })?;
        match v.value.trim().parse::<u32>() {
            Ok(n @ (10 | 11)) => Ok(n),
            _ => Err(Diagnostic::error(
                codes::NOT_IR,
                format!(
                    "IR version \"{}\" is not supported: irun reads IR versions 10 and 11",
                    v.value
                ),
            )
            .at(v.pos)),
        }
    }

    /// A required unsigned integer attribute.
    fn uint_attr(&mut self, e: &Element, name: &str, what: &str) -> Option<u64> {
        let Some(a) = e.attr(name) else {
            self.push(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!("{what} has no `{name}` attribute"),
                )
                .at(e.pos),
            );
            return None;
        };
        let parsed = parse_uint(&a.value);
        if parsed.is_none() {
            self.push(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!(
                        "`{name}=\"{}\"` of {what} is not an unsigned integer",
                        a.value
                    ),
                )
                .at(a.pos),
            );
        }
        parsed
    }

    fn layer(&mut self, mut e: Element, version: u32, weights: &Weights) -> Option<Layer> {
        let id = self.uint_attr(&e, "id", &describe_layer(&e))?;
        let mut layer = Layer {
            id,
            name: String::new(),
            type_name: String::new(),
            version: String::new(),
            data: None,
            extra_attrs: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            rt_info: Vec::new(),
            pos: e.pos,
            constant: None,
            bodies: Vec::new(),
        };
        let (has_type, has_name) = (e.attr("type").is_some(), e.attr("name").is_some());
        let described = describe_layer(&e);
        for a in std::mem::take(&mut e.attrs) {
            match &*a.name {
                "id" => {}
                "name" => layer.name = a.value,
                "type" => layer.type_name = a.value,
                "version" => layer.version = a.value,
                _ => layer.extra_attrs.push(a),
            }
        }
        if !has_type {
            self.push(
                Diagnostic::error(
                    codes::BAD_ATTRIBUTE,
                    format!("{described} has no `type` attribute"),
                )
                .at(e.pos),
            );
            return None;
        }
        if !has_name {
            layer.name = id.to_string();
        }
        let mut parts = BodyParts::default();
        for c in e.children {
            match &*c.name {
                "body" | "then_body" | "else_body" => {
                    let body = self.body(c, version, weights, &layer);
                    parts.bodies.push(body);
                }
                "port_map" | "then_port_map" | "else_port_map" => {
                    let (inputs, outputs) = self.port_map(&c, &layer);
                    parts
                        .port_maps
                        .push((c.name.to_string(), inputs, outputs, c.pos));
                }
                "back_edges" => {
                    let edges = self.back_edges(&c);
                    parts.back_edges.extend(edges);
                }
                "data" => {
                    if layer.data.is_some() {
                        self.push(
                            Diagnostic::error(
                                codes::BAD_ATTRIBUTE,
                                "a layer has two <data> elements",
                            )
                            .at(c.pos)
                            .on_layer(layer.layer_ref()),
                        );
                    }
                    layer.data = Some(DataAttrs {
                        attrs: c.attrs,
                        pos: c.pos,
                    });
                }
                "input" | "output" => {
                    let is_input = c.name == "input";
                    for p in c.children {
                        if p.name != "port" {
                            self.unknown(&p, if is_input { "<input>" } else { "<output>" });
                        } else if let Some(port) = self.port(p, &layer) {
                            if is_input {
                                layer.inputs.push(port);
                            } else {
                                layer.outputs.push(port);
                            }
                        }
                    }
                }
                // OpenVINO reads layer rt_info only for IR v11; v10 files never contain it.
                "rt_info" if version > 10 => {
                    layer.rt_info = c.children.into_iter().map(rt_node).collect()
                }
                "rt_info" => {}
                // Old IR writers put weights/biases/blobs here; nothing reads them since v10.
                "blobs" => {}
                _ => self.unknown(&c, "<layer>"),
            }
        }
        self.pair_bodies(&mut layer, parts);
        self.check_port_ids(&layer);
        if layer.type_name == "Const" {
            self.const_info(&mut layer, weights);
        }
        Some(layer)
    }

    fn check_port_ids(&mut self, layer: &Layer) {
        let mut seen = std::collections::HashSet::new();
        for p in layer.inputs.iter().chain(&layer.outputs) {
            if !seen.insert(p.id) {
                self.push(
                    Diagnostic::error(
                        codes::DUPLICATE_ID,
                        format!("port id {} is used twice in this layer", p.id),
                    )
                    .at(p.pos)
                    .on_layer(layer.layer_ref()),
                );
            }
        }
    }

    fn port(&mut self, e: Element, layer: &Layer) -> Option<Port> {
        let id = match e.attr("id").map(|a| (a, parse_uint(&a.value))) {
            Some((_, Some(id))) => id,
            Some((a, None)) => {
                self.push(
                    Diagnostic::error(
                        codes::BAD_ATTRIBUTE,
                        format!("port id \"{}\" is not an unsigned integer", a.value),
                    )
                    .at(a.pos)
                    .on_layer(layer.layer_ref()),
                );
                return None;
            }
            None => {
                self.push(
                    Diagnostic::error(codes::BAD_ATTRIBUTE, "<port> has no `id` attribute")
                        .at(e.pos)
                        .on_layer(layer.layer_ref()),
                );
                return None;
            }
        };
        let precision = e.attr("precision").and_then(|a| {
            let t = ElementType::from_type_string(&a.value);
            if t.is_none() {
                self.push(
                    Diagnostic::error(
                        codes::BAD_ELEMENT_TYPE,
                        format!("port {id} has unknown precision \"{}\"", a.value),
                    )
                    .at(a.pos)
                    .on_layer(layer.layer_ref()),
                );
            }
            t
        });
        let mut port = Port {
            id,
            precision,
            names: e
                .attr("names")
                .map(|a| split_tensor_names(&a.value))
                .unwrap_or_default(),
            dims: Vec::new(),
            rt_info: Vec::new(),
            pos: e.pos,
        };
        for c in e.children {
            match &*c.name {
                "dim" => {
                    let text = c.text.trim();
                    match text.parse::<i64>() {
                        Ok(d) if d >= -1 => port.dims.push(d),
                        _ => {
                            self.push(
                                Diagnostic::error(
                                    codes::BAD_DIM,
                                    format!("<dim>{text}</dim> of port {id} is not an integer >= -1 (write -1 for a dynamic dimension)"),
                                )
                                .at(c.pos)
                                .on_layer(layer.layer_ref()),
                            );
                            port.dims.push(-1);
                        }
                    }
                }
                "rt_info" => port.rt_info = c.children.into_iter().map(rt_node).collect(),
                _ => self.unknown(&c, "<port>"),
            }
        }
        Some(port)
    }

    fn const_info(&mut self, layer: &mut Layer, weights: &Weights) {
        let lref = layer.layer_ref();
        let Some(data) = &layer.data else {
            self.push(
                Diagnostic::error(codes::BAD_WEIGHTS, "Const has no <data> element")
                    .at(layer.pos)
                    .on_layer(lref),
            );
            return;
        };
        let get = |name: &str| data.attrs.iter().find(|a| a.name == name);
        let mut missing = Vec::new();
        for name in ["element_type", "shape", "offset", "size"] {
            if get(name).is_none() {
                missing.push(name);
            }
        }
        if !missing.is_empty() {
            self.push(
                Diagnostic::error(
                    codes::BAD_WEIGHTS,
                    format!("Const <data> lacks {}", missing.join(", ")),
                )
                .at(data.pos)
                .on_layer(lref),
            );
            return;
        }
        let (et, shape, offset, size) = (
            get("element_type").unwrap(),
            get("shape").unwrap(),
            get("offset").unwrap(),
            get("size").unwrap(),
        );
        let bad = |a: &Attr, msg: String| {
            Diagnostic::error(codes::BAD_WEIGHTS, msg)
                .at(a.pos)
                .on_layer(lref.clone())
        };
        let Some(ty) = ElementType::from_type_string(&et.value) else {
            self.push(
                Diagnostic::error(
                    codes::BAD_ELEMENT_TYPE,
                    format!("Const element_type \"{}\" is not an element type", et.value),
                )
                .at(et.pos)
                .on_layer(lref),
            );
            return;
        };
        let dims = match parse_const_shape(&shape.value) {
            Ok(d) => d,
            Err(e) => {
                return self.push(bad(shape, format!("Const shape \"{}\": {e}", shape.value)))
            }
        };
        let Some(off) = parse_uint(&offset.value) else {
            return self.push(bad(
                offset,
                format!(
                    "Const offset \"{}\" is not an unsigned integer",
                    offset.value
                ),
            ));
        };
        let Some(sz) = parse_uint(&size.value) else {
            return self.push(bad(
                size,
                format!("Const size \"{}\" is not an unsigned integer", size.value),
            ));
        };
        match check_const(weights, ty, dims, off, sz) {
            Ok(info) => layer.constant = Some(info),
            Err(msg) => self.push(
                Diagnostic::error(codes::BAD_WEIGHTS, msg)
                    .at(data.pos)
                    .on_layer(lref),
            ),
        }
    }

    fn edge(&mut self, e: &Element) -> Option<Edge> {
        let from_layer = self.uint_attr(e, "from-layer", "<edge>");
        let from_port = self.uint_attr(e, "from-port", "<edge>");
        let to_layer = self.uint_attr(e, "to-layer", "<edge>");
        let to_port = self.uint_attr(e, "to-port", "<edge>");
        Some(Edge {
            from_layer: from_layer?,
            from_port: from_port?,
            to_layer: to_layer?,
            to_port: to_port?,
            pos: e.pos,
        })
    }
}

/// A decimal unsigned integer (surrounding spaces allowed, no sign).
pub fn parse_uint(s: &str) -> Option<u64> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}
