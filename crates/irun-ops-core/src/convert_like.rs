//! ConvertLike-1: `data` converted to the element type of `like` (whose shape is ignored),
//! with Convert-1's rules; no copy when the types already agree.

use crate::attrs::AttrReader;
use crate::convert::convert_value;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use irun_tensor::ElementType;

#[derive(Debug)]
pub struct ConvertLike;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ConvertLike))
}

impl Op for ConvertLike {
    fn name(&self) -> &'static str {
        "ConvertLike-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        if inputs.iter().any(|f| f.ty == ElementType::String) {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                "ConvertLike does not convert to or from string",
            ));
        }
        Ok(vec![Fact::new(inputs[1].ty, inputs[0].shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, like] = take_inputs::<2>(inputs, self.name())?;
        Ok(vec![convert_value(&data, like.element_type())?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_tensor::Tensor;
    use std::sync::Arc;

    #[test]
    fn converts_to_the_like_type_and_shares_when_equal() {
        let x = Arc::new(Tensor::from_f32(vec![2], vec![1.7, -2.5]).unwrap());
        let like = Arc::new(Tensor::from_i32(vec![5], vec![0; 5]).unwrap());
        let out = ConvertLike.eval(vec![x.clone(), like]).unwrap();
        assert_eq!(out[0].values::<i32>().unwrap(), &[1, -2]);
        let same = ConvertLike.eval(vec![x.clone(), x.clone()]).unwrap();
        assert!(same[0].shares_storage_with(&x));
    }
}
