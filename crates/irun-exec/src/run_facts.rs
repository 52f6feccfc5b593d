//! The facts a run works with: what each ReadValue will give before the run, and the
//! node facts for the run's inputs (the compiled ones, or a new inference for other shapes,
//! the last one kept).

use std::sync::Arc;

use irun_graph::NodeId;
use irun_ops::{Fact, Value};
use irun_tensor::ElementType;

use crate::plan::Source;
use crate::{Executable, InferredFacts, RunError, RunErrorKind, RunFacts, State};

impl Executable {
    /// What each ReadValue step will give, where that is known before the run: the stored
    /// value's type and shape, or zeros of the variable's shape (dynamic dims at their lower
    /// bound, 0 for `?`, as OpenVINO's CPU plugin starts them) for a ReadValue without an
    /// initial-value input. ReadValues that
    /// compute their initial value are left to inference.
    pub(crate) fn variable_reads(&self, state: &State) -> Vec<(NodeId, ElementType, Vec<usize>)> {
        self.plan
            .steps
            .iter()
            .filter_map(|step| {
                let Source::ReadValue(v) = step.source else {
                    return None;
                };
                if let Some(t) = &state.values[v] {
                    return Some((step.node, t.element_type(), t.shape().to_vec()));
                }
                if !step.inputs.is_empty() {
                    return None;
                }
                let info = &self.variables[v];
                let zeros = info
                    .shape
                    .dims()
                    .map(|d| {
                        d.iter()
                            .map(|d| usize::try_from(d.min()).unwrap_or(usize::MAX))
                            .collect()
                    })
                    .unwrap_or_default();
                Some((step.node, info.element_type, zeros))
            })
            .collect()
    }

    /// The facts of every node for these inputs and variable values: the compiled ones when
    /// every input and every known ReadValue is as inferred, else a new inference with the
    /// concrete shapes.
    pub(crate) fn concrete_facts(
        &self,
        inputs: &[Value],
        reads: &[(NodeId, ElementType, Vec<usize>)],
    ) -> Result<RunFacts<'_>, RunError> {
        let as_declared = self.inputs.iter().zip(inputs).all(|(info, v)| {
            info.shape.to_static().as_deref() == Some(v.shape())
                && info.element_type == v.element_type()
        }) && reads.iter().all(|(n, ty, shape)| {
            self.graph.facts[*n]
                .first()
                .is_some_and(|f| f.ty == *ty && f.shape.to_static().as_deref() == Some(&shape[..]))
        });
        if as_declared {
            return Ok(RunFacts::Declared(&self.graph.facts));
        }
        let overrides: Vec<(NodeId, Fact)> = self
            .graph
            .parameters
            .iter()
            .zip(inputs)
            .map(|(&p, v)| (p, Fact::of_static(v.element_type(), v.shape())))
            .chain(
                reads
                    .iter()
                    .map(|(n, ty, shape)| (*n, Fact::of_static(*ty, shape))),
            )
            .collect();
        let recent: Option<InferredFacts> = self
            .recent_facts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some((_, facts)) = recent.as_ref().filter(|(key, _)| *key == overrides) {
            return Ok(RunFacts::Inferred(facts.clone()));
        }
        // The last inference is the base of this one: a decode step differs from the last
        // step in the sequence length alone, which few nodes' facts depend on.
        let previous = recent
            .as_ref()
            .map(|(given, facts)| (given.as_slice(), facts.as_slice()));
        let inferred = self.graph.infer_with_inputs_after(&overrides, previous);
        let facts = Arc::new(inferred.map_err(|d| {
            RunError::new(
                RunErrorKind::Op,
                format!("with these input shapes, {}", d.message),
            )
            .on_layer(d.layer.map(|l| *l))
            .with_code(d.code)
        })?);
        *self.recent_facts.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((overrides, facts.clone()));
        Ok(RunFacts::Inferred(facts))
    }
}
