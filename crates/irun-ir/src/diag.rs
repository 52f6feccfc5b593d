//! Diagnostics: what every stage (reader, graph, inference, execution) reports about a model.
//!
//! A diagnostic has a stable code (scripts match on it), a severity, a message with the concrete
//! values, and where it is: the XML position, the layer and the port.

use std::fmt;

use serde::Serialize;

/// 1-based line and column (in characters) of a place in the XML file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// Identifies a layer in messages: `layer 4 "seu" (ScatterElementsUpdate-opset12)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LayerRef {
    pub id: u64,
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub version: String,
}

impl fmt::Display for LayerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "layer {} \"{}\" ({}", self.id, self.name, self.type_name)?;
        if !self.version.is_empty() {
            write!(f, "-{}", self.version)?;
        }
        f.write_str(")")
    }
}

/// A body a diagnostic is inside: the Loop, TensorIterator or If layer and which of its
/// bodies (`body`, `then_body`, `else_body`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct BodyRef {
    pub layer: LayerRef,
    pub body: String,
}

impl fmt::Display for BodyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} <{}>", self.layer, self.body)
    }
}

/// A port of a layer: `input 1` / `output 0` by slot, with the port id of the XML.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PortRef {
    pub direction: PortDirection,
    /// Position among the layer's inputs (or outputs).
    pub slot: usize,
    /// The `<port id>` of the XML, when the port exists there.
    pub port_id: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PortDirection {
    Input,
    Output,
}

impl fmt::Display for PortRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = match self.direction {
            PortDirection::Input => "input",
            PortDirection::Output => "output",
        };
        write!(f, "{dir} {}", self.slot)?;
        if let Some(id) = self.port_id {
            write!(f, " (port id {id})")?;
        }
        Ok(())
    }
}

/// Kept small (layer and port boxed) because every fallible reader function returns one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pos: Option<Pos>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Box<LayerRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Box<PortRef>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The bodies the layer is in, outermost first; empty in the main graph.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inside: Vec<BodyRef>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            pos: None,
            layer: None,
            port: None,
            notes: Vec::new(),
            inside: Vec::new(),
        }
    }

    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn note(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Note, code, message)
    }

    pub fn at(mut self, pos: Pos) -> Diagnostic {
        self.pos = Some(pos);
        self
    }

    pub fn at_opt(mut self, pos: Option<Pos>) -> Diagnostic {
        self.pos = pos.or(self.pos);
        self
    }

    pub fn on_layer(mut self, layer: LayerRef) -> Diagnostic {
        self.layer = Some(Box::new(layer));
        self
    }

    pub fn on_port(mut self, port: PortRef) -> Diagnostic {
        self.port = Some(Box::new(port));
        self
    }

    /// Places a diagnostic of a body's graph inside `body` (outer levels are added as it
    /// travels out, so the path ends outermost first).
    pub fn inside_body(mut self, body: BodyRef) -> Diagnostic {
        self.inside.insert(0, body);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders like rustc:
    /// ```text
    /// error[E0301]: message
    ///   --> model.xml:12:3
    ///    = layer: layer 4 "seu" (ScatterElementsUpdate-opset12), input 2 (port id 2)
    ///    = note: ...
    /// ```
    /// with `   = in: layer 5 "loop" (Loop-opset5) <body>` lines first for a layer in a body.
    pub fn render(&self, file: &str) -> String {
        let mut s = format!("{}[{}]: {}\n", self.severity, self.code, self.message);
        match self.pos {
            Some(p) => s.push_str(&format!("  --> {file}:{p}\n")),
            None => s.push_str(&format!("  --> {file}\n")),
        }
        for b in &self.inside {
            s.push_str(&format!("   = in: {b}\n"));
        }
        if let Some(l) = &self.layer {
            s.push_str(&format!("   = layer: {l}"));
            if let Some(p) = &self.port {
                s.push_str(&format!(", {p}"));
            }
            s.push('\n');
        }
        for n in &self.notes {
            s.push_str(&format!("   = note: {n}\n"));
        }
        s
    }
}

/// One line, for a diagnostic held apart from its file (an error value, a log):
/// `error[E0501] line 12, layer 5 "s" (ScatterUpdate-opset3), input 1: message`.
/// [`Diagnostic::render`] gives the multi-line form `irun check` prints.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.severity, self.code)?;
        let mut sep = " ";
        if let Some(p) = self.pos {
            write!(f, "{sep}line {}", p.line)?;
            sep = ", ";
        }
        for b in &self.inside {
            write!(f, "{sep}in {b}")?;
            sep = ", ";
        }
        if let Some(l) = &self.layer {
            write!(f, "{sep}{l}")?;
            if let Some(p) = &self.port {
                write!(f, ", {p}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// The stable diagnostic codes. E01xx: files and XML; E02xx: IR structure and weights;
/// E03xx: graph; E04xx: op resolution and attributes; E05xx: shapes and types; E06xx: run time.
pub mod codes {
    /// The model or weights file cannot be read at all.
    pub const UNREADABLE: &str = "E0101";
    /// The file is not XML (or not an IR XML file).
    pub const NOT_XML: &str = "E0102";
    /// The XML is not well-formed.
    pub const MALFORMED_XML: &str = "E0103";
    /// An entity reference other than the five predefined ones and character references.
    pub const ENTITY: &str = "E0104";
    /// The root is not `<net>`, or the IR version is not 10 or 11.
    pub const NOT_IR: &str = "E0105";
    /// A required attribute is missing or has an invalid value in the IR structure.
    pub const BAD_ATTRIBUTE: &str = "E0201";
    /// A `<dim>` is not an integer >= -1.
    pub const BAD_DIM: &str = "E0202";
    /// A port precision or element type is not a known element type.
    pub const BAD_ELEMENT_TYPE: &str = "E0203";
    /// A Const's shape/offset/size is inconsistent or outside the weights file.
    pub const BAD_WEIGHTS: &str = "E0204";
    /// Duplicate layer id, or duplicate port id in a layer.
    pub const DUPLICATE_ID: &str = "E0205";
    /// Unknown or misplaced element (warning).
    pub const UNKNOWN_ELEMENT: &str = "W0206";
    /// A Parameter `shape` attribute that does not parse.
    pub const BAD_SHAPE: &str = "E0207";
    /// An edge names a layer or port that does not exist.
    pub const DANGLING_EDGE: &str = "E0301";
    /// Two edges feed one input port, or an input port has no edge.
    pub const BAD_INPUT_WIRING: &str = "E0302";
    /// The graph has a cycle.
    pub const CYCLE: &str = "E0303";
    /// The model has no Result.
    pub const NO_RESULT: &str = "E0304";
    /// Layers not reachable from any Result (note).
    pub const UNREACHABLE: &str = "N0305";
    /// An edge goes from an input port or into an output port.
    pub const EDGE_DIRECTION: &str = "E0306";
    /// A layer type not spelled as IR spells it (e.g. `Constant` for `Const`).
    pub const BAD_TYPE_SPELLING: &str = "E0307";
    /// Two ReadValues or two Assigns name one state variable.
    pub const DUPLICATE_VARIABLE: &str = "E0308";
    /// An Assign stores a variable no ReadValue reads (warning: the store has no effect).
    pub const UNREAD_VARIABLE: &str = "W0309";
    /// A Parameter feeds no layer (note: the model ignores that input's values; OpenVINO's
    /// ONNX frontend leaves an LSTM's peepholes so).
    pub const UNUSED_INPUT: &str = "N0310";
}
