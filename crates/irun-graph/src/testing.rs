//! Writing small IR documents in tests: `ir(&[layer(...), ...], &[edge(...)])`.

/// A `<port>`: id, precision, dims (`-1` for dynamic), optional names.
pub fn port(id: u64, precision: &str, dims: &[i64]) -> String {
    let dims: String = dims.iter().map(|d| format!("<dim>{d}</dim>")).collect();
    format!("<port id=\"{id}\" precision=\"{precision}\">{dims}</port>")
}

/// A `<layer>` with optional `<data>` attributes (`k="v" ...`), inputs and outputs.
pub fn layer(
    id: u64,
    name: &str,
    ty: &str,
    version: &str,
    data: Option<&str>,
    inputs: &[String],
    outputs: &[String],
) -> String {
    let data = data.map(|d| format!("<data {d}/>")).unwrap_or_default();
    let ins = if inputs.is_empty() {
        String::new()
    } else {
        format!("<input>{}</input>", inputs.concat())
    };
    let outs = if outputs.is_empty() {
        String::new()
    } else {
        format!("<output>{}</output>", outputs.concat())
    };
    format!("<layer id=\"{id}\" name=\"{name}\" type=\"{ty}\" version=\"{version}\">\n{data}{ins}{outs}</layer>\n")
}

/// An `<edge>`.
pub fn edge(from_layer: u64, from_port: u64, to_layer: u64, to_port: u64) -> String {
    format!("<edge from-layer=\"{from_layer}\" from-port=\"{from_port}\" to-layer=\"{to_layer}\" to-port=\"{to_port}\"/>\n")
}

/// A whole IR v11 document.
pub fn ir(layers: &[String], edges: &[String]) -> String {
    format!("<?xml version=\"1.0\"?>\n<net name=\"test\" version=\"11\">\n<layers>\n{}</layers>\n<edges>\n{}</edges>\n</net>\n", layers.concat(), edges.concat())
}

/// A Parameter layer of the given element type and shape (`2,3`), output port 0.
pub fn parameter(
    id: u64,
    name: &str,
    element_type: &str,
    shape: &str,
    precision: &str,
    dims: &[i64],
) -> String {
    let out = format!(
        "<port id=\"0\" precision=\"{precision}\" names=\"{name}\">{}</port>",
        dims.iter()
            .map(|d| format!("<dim>{d}</dim>"))
            .collect::<String>()
    );
    layer(
        id,
        name,
        "Parameter",
        "opset1",
        Some(&format!(
            "shape=\"{shape}\" element_type=\"{element_type}\""
        )),
        &[],
        &[out],
    )
}

/// A Result layer fed through its port 0.
pub fn result(id: u64, name: &str, precision: &str, dims: &[i64]) -> String {
    layer(
        id,
        name,
        "Result",
        "opset1",
        None,
        &[port(0, precision, dims)],
        &[],
    )
}
