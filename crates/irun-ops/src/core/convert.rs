//! Convert-1: element type conversion, `<data destination_type="f32"/>`. Also how compressed
//! weights are stored (f16 Const + Convert to f32).

use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError};

#[derive(Debug, Clone, PartialEq)]
pub struct Convert {
    pub destination_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let destination_type = a.element_type("destination_type")?;
    if destination_type == ElementType::Dynamic {
        return Err(OpError::attribute(
            "destination_type",
            "Convert cannot convert to the dynamic element type",
        ));
    }
    Ok(Box::new(Convert { destination_type }))
}

impl Op for Convert {
    fn name(&self) -> &'static str {
        "Convert-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        if inputs[0].ty == ElementType::String || self.destination_type == ElementType::String {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                "Convert does not convert to or from string",
            ));
        }
        Ok(vec![Fact::new(
            self.destination_type,
            inputs[0].shape.clone(),
        )])
    }
}
