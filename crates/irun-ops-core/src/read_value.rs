//! ReadValue-3 and ReadValue-6: read a state variable (a KV cache, an RNN's hidden state).
//!
//! The output is the variable's value as the last run's Assign left it; on a model's first
//! run and after a reset it is the initial value: the `init_value` input as computed in that
//! run, or (ReadValue-6 without that input) zeros of the variable's type and shape, dynamic
//! dims 0, as OpenVINO's CPU plugin gives. The executor serves the node (it holds the
//! variables); the op declares the variable and infers.

use irun_tensor::{ElementType, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, Op, OpError, VariableAccess};

#[derive(Debug, Clone, PartialEq)]
pub struct ReadValue {
    pub variable_id: String,
    /// ReadValue-6's declared `variable_type` and `variable_shape`; `None` for ReadValue-3,
    /// whose variable takes the type and shape of `init_value`.
    pub declared: Option<(ElementType, PartialShape)>,
}

/// `variable_id`, required and not empty: it is the variable's key in the state.
pub(crate) fn variable_id(a: &AttrReader) -> Result<String, OpError> {
    let id = a.required("variable_id")?.value.clone();
    if id.is_empty() {
        return Err(OpError::attribute("variable_id", "`variable_id` is empty"));
    }
    Ok(id)
}

pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ReadValue {
        variable_id: variable_id(a)?,
        declared: None,
    }))
}

/// `variable_shape` uses the partial-shape grammar (`1,?,4`; empty: a scalar).
pub fn build_v6(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let variable_id = variable_id(a)?;
    let ty = a.element_type("variable_type")?;
    let shape = PartialShape::parse(&a.required("variable_shape")?.value)
        .map_err(|e| OpError::attribute("variable_shape", e))?;
    Ok(Box::new(ReadValue {
        variable_id,
        declared: Some((ty, shape)),
    }))
}

impl Op for ReadValue {
    fn name(&self) -> &'static str {
        match self.declared {
            None => "ReadValue-3",
            Some(_) => "ReadValue-6",
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let Some((ty, shape)) = &self.declared else {
            if inputs.len() != 1 {
                return Err(OpError::new(
                    codes::ARITY,
                    format!("ReadValue-3 takes 1 input, got {}", inputs.len()),
                ));
            }
            return Ok(vec![Fact::new(inputs[0].ty, inputs[0].shape.clone())]);
        };
        match inputs {
            [] => {}
            [init] => {
                if *ty != ElementType::Dynamic && init.ty != ElementType::Dynamic && init.ty != *ty
                {
                    return Err(OpError::new(
                        codes::ELEMENT_TYPE,
                        format!(
                            "the initial value's element type {} is not the variable `{}`'s type {ty}",
                            init.ty, self.variable_id
                        ),
                    ));
                }
                if !shape.compatible(&init.shape) {
                    return Err(OpError::new(
                        codes::SHAPE,
                        format!(
                            "the initial value's shape {} is not compatible with the variable `{}`'s shape {shape}",
                            init.shape, self.variable_id
                        ),
                    ));
                }
            }
            _ => {
                return Err(OpError::new(
                    codes::ARITY,
                    format!("ReadValue-6 takes 0 or 1 inputs, got {}", inputs.len()),
                ))
            }
        }
        let ty = match (ty, inputs.first()) {
            (ElementType::Dynamic, Some(init)) => init.ty,
            _ => *ty,
        };
        Ok(vec![Fact::new(ty, shape.clone())])
    }

    /// A variable's value changes between runs, so nothing downstream may be folded.
    fn may_fold(&self) -> bool {
        false
    }

    fn variable(&self) -> Option<VariableAccess<'_>> {
        Some(VariableAccess::Read(&self.variable_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::fact;

    fn v6(ty: ElementType, shape: &str) -> ReadValue {
        ReadValue {
            variable_id: "cache".into(),
            declared: Some((ty, PartialShape::parse(shape).unwrap())),
        }
    }

    #[test]
    fn the_variable_declares_type_and_shape() {
        let op = v6(ElementType::F32, "1,?,4");
        let out = op.infer(&[]).unwrap();
        assert_eq!(out[0].ty, ElementType::F32);
        assert_eq!(out[0].shape.to_string(), "[1,?,4]");
        let out = op.infer(&[fact(ElementType::F32, "1,2,4")]).unwrap();
        assert_eq!(out[0].shape.to_string(), "[1,?,4]");
        assert!(!op.may_fold());
        assert_eq!(op.variable(), Some(VariableAccess::Read("cache")));
    }

    #[test]
    fn an_initial_value_must_fit_the_variable() {
        let op = v6(ElementType::F32, "1,?,4");
        let e = op.infer(&[fact(ElementType::F16, "1,2,4")]).unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let e = op.infer(&[fact(ElementType::F32, "1,2,5")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        assert!(e.message.contains("`cache`"), "{}", e.message);
        let e = op
            .infer(&[
                fact(ElementType::F32, "1,2,4"),
                fact(ElementType::F32, "1,2,4"),
            ])
            .unwrap_err();
        assert_eq!(e.code, codes::ARITY);
    }

    #[test]
    fn version_3_takes_its_initial_value_s_facts() {
        let op = ReadValue {
            variable_id: "h".into(),
            declared: None,
        };
        let out = op.infer(&[fact(ElementType::I32, "2,?")]).unwrap();
        assert_eq!(out[0].ty, ElementType::I32);
        assert_eq!(out[0].shape.to_string(), "[2,?]");
        assert_eq!(op.infer(&[]).unwrap_err().code, codes::ARITY);
    }
}
