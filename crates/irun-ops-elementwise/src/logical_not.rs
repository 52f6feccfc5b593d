//! LogicalNot-1: `!x` on booleans. OpenVINO 2026.4 also accepts numeric inputs, giving
//! `x == 0 ? 1 : 0` in the input's type; so does irun.

use std::sync::Arc;

use irun_tensor::{with_number, ElementType};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::num::Number;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::unary::{map_in_place, unsupported};

#[derive(Debug)]
pub struct LogicalNot;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(LogicalNot))
}

impl Op for LogicalNot {
    fn name(&self) -> &'static str {
        "LogicalNot-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        if inputs[0].ty == ElementType::String {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                "LogicalNot-1 of strings",
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
            with_number!(ty, T => map_in_place::<T>(x, |v| if v.is_zero() { T::from_f64(1.0) } else { T::from_f64(0.0) })?,
                else return Err(unsupported(self.name(), ty)))
        };
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn negates_booleans_and_numbers() {
        let out = run(&LogicalNot, vec![bools(&[2], &[true, false])]).unwrap();
        assert_eq!(out, bools(&[2], &[false, true]));
        let out = run(&LogicalNot, vec![i32s(&[3], &[0, 5, -1])]).unwrap();
        assert_eq!(out, i32s(&[3], &[1, 0, 0]));
    }
}
