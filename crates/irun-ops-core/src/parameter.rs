//! Parameter-1: a model input. `<data shape="1..4,?" element_type="f32"/>`.

use irun_tensor::{ElementType, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{expect_inputs, Op, OpError};

#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub element_type: ElementType,
    pub shape: PartialShape,
}

/// `element_type` is the enum name (case-insensitive; `FP32` is rejected, as in OpenVINO);
/// `shape` uses the full partial-shape grammar; an absent `shape` is a scalar, as in OpenVINO.
pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let element_type = a.element_type("element_type")?;
    let shape = match a.get("shape") {
        Some(s) => PartialShape::parse(&s.value).map_err(|e| OpError::attribute("shape", e))?,
        None => PartialShape::new(Vec::new()),
    };
    Ok(Box::new(Parameter {
        element_type,
        shape,
    }))
}

impl Op for Parameter {
    fn name(&self) -> &'static str {
        "Parameter-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 0, self.name())?;
        Ok(vec![Fact::new(self.element_type, self.shape.clone())])
    }
}
