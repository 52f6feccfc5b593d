//! Checks of what kernels return, and errors that name the layer.

use irun_graph::NodeId;
use irun_ops::{Fact, Value};
use irun_tensor::ElementType;

use crate::{Executable, RunError, RunErrorKind};

impl Executable {
    /// A kernel's outputs against the inferred facts (a Result's one fact is the model
    /// output): as many, of the inferred element types, of the inferred shapes where those are
    /// static, for the outputs that are `read` (the others may be placeholders). A
    /// contradiction is an internal error naming the layer, never a panic further on.
    pub(crate) fn check_outputs(
        &self,
        n: NodeId,
        produced: &[Value],
        facts: &[Fact],
        read: impl Fn(usize) -> bool,
    ) -> Result<(), RunError> {
        let want = facts.len();
        let internal = |msg: String| {
            self.layer_error(n, RunErrorKind::Op, format!("internal error: {msg}"))
                .with_code(irun_ops::codes::INTERNAL)
        };
        if produced.len() != want {
            return Err(internal(format!(
                "the kernel returned {} output(s), the layer has {want}",
                produced.len()
            )));
        }
        for (slot, (v, f)) in produced.iter().zip(facts).enumerate() {
            if !read(slot) {
                continue;
            }
            // A value in levels form (`levels.rs`) is u8 where the graph says f32.
            let levels = self.levels_out[n]
                && (v.element_type(), f.ty) == (ElementType::U8, ElementType::F32);
            let type_ok = f.ty == ElementType::Dynamic || v.element_type() == f.ty || levels;
            let shape_ok = f.shape.to_static().is_none_or(|s| s == v.shape());
            if !type_ok || !shape_ok {
                return Err(internal(format!(
                    "output {slot} is {} {}, inference said {f}",
                    v.element_type(),
                    irun_tensor::fmt_shape(v.shape())
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn layer_error(&self, n: NodeId, kind: RunErrorKind, message: String) -> RunError {
        let layer = self.graph.layer(n);
        let op = self.graph.ops[n]
            .as_ref()
            .map_or(layer.type_name.as_str(), |op| op.name());
        RunError::new(
            kind,
            format!("layer {} (\"{}\", {op}): {message}", layer.id, layer.name),
        )
        .on_layer(Some(layer.layer_ref()))
    }
}
