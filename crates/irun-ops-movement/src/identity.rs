//! Identity-16: the input, unchanged, of any element type. The output shares the input's
//! values (tensors are copied before anything writes to shared values).

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct Identity;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Identity))
}

impl Op for Identity {
    fn name(&self) -> &'static str {
        "Identity-16"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        Ok(vec![x])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn the_input_unchanged_whatever_its_type() {
        for x in [
            i64s(&[2, 2], &[1, -2, 3, i64::MIN]),
            bools(&[3], &[true, false, true]),
        ] {
            let out = run(&Identity, vec![x.clone()]).unwrap();
            assert_eq!(out[0], x);
        }
        let f = Identity.infer(&[fact(U8, "2,?")]).unwrap();
        assert_eq!((f[0].ty, f[0].shape.to_string()), (U8, "[2,?]".to_string()));
    }
}
