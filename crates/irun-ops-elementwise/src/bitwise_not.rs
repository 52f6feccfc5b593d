//! BitwiseNot-13: `!x` on integers (`~5 = -6` in i8, `~255 = 0` in u8) or booleans.

use std::sync::Arc;

use irun_tensor::{with_int, ElementType};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::unary::{map_in_place, unsupported};

#[derive(Debug)]
pub struct BitwiseNot;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(BitwiseNot))
}

impl Op for BitwiseNot {
    fn name(&self) -> &'static str {
        "BitwiseNot-13"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let ty = inputs[0].ty;
        if !(ty == ElementType::Boolean || ty == ElementType::Dynamic || ty.is_integral_number()) {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("BitwiseNot-13: input must be an integer or boolean type, got {ty}"),
            ));
        }
        Ok(vec![inputs[0].clone()])
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let ty = x.element_type();
        let out = if ty == ElementType::Boolean {
            map_in_place::<bool>(x, |v| !v)?
        } else {
            with_int!(ty, T => map_in_place::<T>(x, |v| !v)?, else return Err(unsupported(self.name(), ty)))
        };
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn complements() {
        assert_eq!(
            run(&BitwiseNot, vec![i8s(&[1], &[5])]).unwrap(),
            i8s(&[1], &[-6])
        );
        assert_eq!(
            run(&BitwiseNot, vec![u8s(&[1], &[255])]).unwrap(),
            u8s(&[1], &[0])
        );
        assert_eq!(
            run(&BitwiseNot, vec![bools(&[1], &[true])]).unwrap(),
            bools(&[1], &[false])
        );
    }
}
