//! irun-ir: reads OpenVINO IR v10/v11 (`model.xml` + `model.bin`) into an [`IrModel`].
//!
//! Architecture invariant: irun-ir never interprets an op type. Layers keep `type`, `version`
//! and `<data>` as strings; the one exception is the weight reference of `type="Const"`
//! (`element_type`/`shape`/`offset`/`size`), which the reader checks against the `.bin` as
//! OpenVINO's own reader does. Every layer, port, edge and attribute keeps its XML position.
//! Reading never panics: fatal problems return one [`Diagnostic`], the rest are collected in
//! [`IrModel::diagnostics`].

pub mod decode;
pub mod diag;
mod dom;
mod model;
mod reader;
mod weights;

pub use diag::{codes, BodyRef, Diagnostic, LayerRef, PortDirection, PortRef, Pos, Severity};
pub use model::{
    split_tensor_names, Attr, BackEdge, Body, DataAttrs, Edge, IrModel, Layer, Port, PortMapEntry,
    RtNode,
};
pub use reader::{default_bin_path, parse_uint, read_xml_file, xml_text, MAX_XML_BYTES};
pub use weights::{check_const, parse_const_shape, ConstInfo, Weights};
