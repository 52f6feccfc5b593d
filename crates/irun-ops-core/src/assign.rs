//! Assign-3 and Assign-6: store a value in a state variable for the next run.
//!
//! The layer has an output port but no outgoing edge: it is a model sink, as Result is. The
//! executor stores the input when the run succeeds; whether the value fits the variable (the
//! type and shape its ReadValue declares) is checked by the graph, which knows both nodes.

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{expect_inputs, Op, OpError, VariableAccess};
use crate::read_value::variable_id;

#[derive(Debug, Clone, PartialEq)]
pub struct Assign {
    pub variable_id: String,
    version: u32,
}

pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Assign {
        variable_id: variable_id(a)?,
        version: 3,
    }))
}

pub fn build_v6(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Assign {
        variable_id: variable_id(a)?,
        version: 6,
    }))
}

impl Op for Assign {
    fn name(&self) -> &'static str {
        if self.version == 3 {
            "Assign-3"
        } else {
            "Assign-6"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        Ok(vec![Fact::new(inputs[0].ty, inputs[0].shape.clone())])
    }

    fn may_fold(&self) -> bool {
        false
    }

    fn variable(&self) -> Option<VariableAccess<'_>> {
        Some(VariableAccess::Write(&self.variable_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::fact;
    use irun_tensor::ElementType;

    #[test]
    fn passes_its_input_s_facts_and_names_its_variable() {
        let op = Assign {
            variable_id: "k".into(),
            version: 6,
        };
        let out = op.infer(&[fact(ElementType::F32, "1,?,4")]).unwrap();
        assert_eq!(out[0].shape.to_string(), "[1,?,4]");
        assert_eq!(op.variable(), Some(VariableAccess::Write("k")));
        assert!(op.infer(&[]).is_err());
    }
}
