//! State variables: which ReadValue reads and which Assign writes each `variable_id`, and
//! whether what the Assign stores fits what the ReadValue declares.

use irun_ir::{codes, Diagnostic};
use irun_ops::{codes as op_codes, VariableAccess};
use irun_tensor::ElementType;

use crate::graph::{Graph, NodeId};

/// A state variable of the model: the node that reads it and the node that writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    pub id: String,
    /// The ReadValue; its output fact is the variable's type and shape.
    pub read: Option<NodeId>,
    /// The Assign.
    pub write: Option<NodeId>,
}

impl Graph {
    /// Collects the variables of the ordered nodes (in XML order of first use) and checks
    /// them: one reader and one writer per variable, and an Assign's input of the type and a
    /// shape compatible with its ReadValue's output.
    pub(crate) fn collect_variables(&mut self) {
        let mut variables: Vec<Variable> = Vec::new();
        let mut diags = Vec::new();
        let mut ordered: Vec<NodeId> = self.order.clone();
        ordered.sort_unstable();
        for n in ordered {
            let Some(access) = self.ops[n].as_ref().and_then(|op| op.variable()) else {
                continue;
            };
            let (id, is_read) = match access {
                VariableAccess::Read(id) => (id, true),
                VariableAccess::Write(id) => (id, false),
            };
            let i = match variables.iter().position(|v| v.id == id) {
                Some(i) => i,
                None => {
                    variables.push(Variable {
                        id: id.to_string(),
                        read: None,
                        write: None,
                    });
                    variables.len() - 1
                }
            };
            let slot = if is_read {
                &mut variables[i].read
            } else {
                &mut variables[i].write
            };
            if let Some(first) = *slot {
                let l = self.layer(n);
                diags.push(
                    Diagnostic::error(
                        codes::DUPLICATE_VARIABLE,
                        format!(
                            "variable `{id}` is {} by two layers, {} and {}: a variable has one ReadValue and one Assign",
                            if is_read { "read" } else { "written" },
                            self.layer(first).id,
                            l.id
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
            } else {
                *slot = Some(n);
            }
        }
        for v in &variables {
            let Some(w) = v.write else { continue };
            let l = self.layer(w);
            let Some(r) = v.read else {
                diags.push(
                    Diagnostic::warning(
                        codes::UNREAD_VARIABLE,
                        format!(
                            "no ReadValue reads variable `{}`, so what this Assign stores is never used",
                            v.id
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
                continue;
            };
            let (Some(want), Some(got)) = (self.facts[r].first(), self.facts[w].first()) else {
                continue;
            };
            let type_clash = want.ty != ElementType::Dynamic
                && got.ty != ElementType::Dynamic
                && want.ty != got.ty;
            let problem = if type_clash {
                Some((
                    op_codes::ELEMENT_TYPE,
                    format!("element type {}", got.ty),
                    format!("type {}", want.ty),
                ))
            } else if !want.shape.compatible(&got.shape) {
                Some((
                    op_codes::SHAPE,
                    format!("shape {}", got.shape),
                    format!("shape {}", want.shape),
                ))
            } else {
                None
            };
            if let Some((code, got, want)) = problem {
                diags.push(
                    Diagnostic::error(
                        code,
                        format!(
                            "Assign stores a value of {got} in variable `{}`, whose ReadValue (layer {}) declares {want}",
                            v.id,
                            self.layer(r).id
                        ),
                    )
                    .at(l.pos)
                    .on_layer(l.layer_ref()),
                );
            }
        }
        self.variables = variables;
        self.diagnostics.extend(diags);
    }
}
