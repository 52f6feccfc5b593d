//! Result-1: a model output; passes its input's fact through.

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{expect_inputs, Op, OpError, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ResultOp;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ResultOp))
}

impl Op for ResultOp {
    fn name(&self) -> &'static str {
        "Result-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let mut f = inputs[0].clone();
        f.value = None;
        Ok(vec![f])
    }

    /// The output is the input, shared, not copied.
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        Ok(inputs.into_iter().take(1).collect())
    }
}
