//! Bucketize-3: the bucket of each `data` value among the sorted 1-D `buckets` boundaries:
//! with `with_right_bound` (default) the index of the first boundary `>= x`, else of the
//! first `> x`; in `[0, len]` (0 for no boundaries). `output_type` i64 (default) or i32.
//! Values compare as f64 (the two inputs may have different numeric types).

use std::sync::Arc;

use irun_tensor::{ElementType, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct Bucketize {
    pub right_bound: bool,
    pub output_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Bucketize {
        right_bound: a.bool_or("with_right_bound", true)?,
        output_type: index_type(a)?,
    }))
}

/// `output_type`: i64 (default) or i32.
pub fn index_type(a: &AttrReader) -> Result<ElementType, OpError> {
    Ok(match a.enum_or("output_type", &["i64", "i32"], "i64")? {
        "i32" => ElementType::I32,
        _ => ElementType::I64,
    })
}

/// A numeric tensor's values as f64 (input `slot`).
pub fn numbers(t: &Tensor, slot: usize, op: &str) -> Result<Vec<f64>, OpError> {
    let ty = t.element_type();
    let bad = || {
        OpError::input(
            slot,
            codes::ELEMENT_TYPE,
            format!("{op}: input {slot} must be numeric, got {ty}"),
        )
    };
    irun_opkit::number::f64_values(t).ok_or_else(bad)
}

/// Indices as a tensor of `ty` (i32 or i64).
pub fn indices(ty: ElementType, shape: Vec<usize>, v: Vec<usize>) -> Result<Value, OpError> {
    let t = if ty == ElementType::I32 {
        Tensor::from_i32(shape, v.into_iter().map(|x| x as i32).collect())
    } else {
        Tensor::from_i64(shape, v.into_iter().map(|x| x as i64).collect())
    };
    t.map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

impl Op for Bucketize {
    fn name(&self) -> &'static str {
        "Bucketize-3"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        for (slot, f) in inputs.iter().enumerate() {
            if matches!(f.ty, ElementType::Boolean | ElementType::String) {
                return Err(OpError::input(
                    slot,
                    codes::ELEMENT_TYPE,
                    format!(
                        "{}: input {slot} must be numeric, got {}",
                        self.name(),
                        f.ty
                    ),
                ));
            }
        }
        if inputs[1].rank().is_some_and(|r| r != 1) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{}: buckets {} must be 1-D", self.name(), inputs[1].shape),
            ));
        }
        Ok(vec![Fact::new(self.output_type, inputs[0].shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, b] = take_inputs::<2>(inputs, self.name())?;
        let (xs, bs) = (numbers(&x, 0, self.name())?, numbers(&b, 1, self.name())?);
        let out = xs
            .iter()
            .map(|&v| {
                if self.right_bound {
                    bs.partition_point(|&e| e < v)
                } else {
                    bs.partition_point(|&e| e <= v)
                }
            })
            .collect();
        Ok(vec![indices(self.output_type, x.shape().to_vec(), out)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn both_bounds() {
        let x = f32s(&[5], &[0.5, 1., 1.5, 3., 4.]);
        let b = i32s(&[3], &[1, 2, 3]);
        let op = Bucketize {
            right_bound: true,
            output_type: ElementType::I64,
        };
        assert_eq!(
            run(&op, vec![x.clone(), b.clone()]).unwrap()[0],
            i64s(&[5], &[0, 0, 1, 2, 3])
        );
        let op = Bucketize {
            right_bound: false,
            output_type: ElementType::I32,
        };
        assert_eq!(
            run(&op, vec![x, b]).unwrap()[0],
            i32s(&[5], &[0, 1, 1, 3, 3])
        );
    }
}
