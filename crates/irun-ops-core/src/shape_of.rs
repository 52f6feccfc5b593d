//! ShapeOf-1 (always i64) and ShapeOf-3 (`output_type` i32 or i64, default i64): the shape of
//! the input as a 1-D tensor. When the input shape is static, the value is known at inference
//! time, which lets constant shape subgraphs fold.

use irun_tensor::{ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ShapeOf {
    pub output_type: ElementType,
    pub version: u32,
}

pub fn build_v1(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ShapeOf {
        output_type: ElementType::I64,
        version: 1,
    }))
}

pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let output_type = match a.get("output_type") {
        None => ElementType::I64,
        Some(_) => match a.element_type("output_type")? {
            t @ (ElementType::I32 | ElementType::I64) => t,
            t => {
                return Err(OpError::attribute(
                    "output_type",
                    format!("ShapeOf output_type must be i32 or i64, got {t}"),
                ))
            }
        },
    };
    Ok(Box::new(ShapeOf {
        output_type,
        version: 3,
    }))
}

/// The shape as a tensor of `ty` (i32 or i64); `None` if a dimension does not fit.
pub fn shape_tensor(shape: &[usize], ty: ElementType) -> Option<Tensor> {
    let n = vec![shape.len()];
    match ty {
        ElementType::I32 => Tensor::from_i32(
            n,
            shape
                .iter()
                .map(|&d| i32::try_from(d).ok())
                .collect::<Option<_>>()?,
        )
        .ok(),
        _ => Tensor::from_i64(n, shape.iter().map(|&d| d as i64).collect()).ok(),
    }
}

impl Op for ShapeOf {
    fn name(&self) -> &'static str {
        if self.version == 1 {
            "ShapeOf-1"
        } else {
            "ShapeOf-3"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let input = &inputs[0].shape;
        let out = match input.rank() {
            Some(r) => PartialShape::fixed(&[r]),
            None => PartialShape::dynamic_of_rank(1),
        };
        let mut fact = Fact::new(self.output_type, out);
        if let Some(t) = input
            .to_static()
            .and_then(|s| shape_tensor(&s, self.output_type))
        {
            fact = fact.with_value(t);
        }
        Ok(vec![fact])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let input = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "ShapeOf takes 1 input"))?;
        let t = shape_tensor(input.shape(), self.output_type).ok_or_else(|| {
            OpError::new(
                codes::RUN_SHAPE,
                format!("a dimension of {:?} does not fit in i32", input.shape()),
            )
        })?;
        Ok(vec![std::sync::Arc::new(t)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_shapes_are_known_values() {
        let op = ShapeOf {
            output_type: ElementType::I32,
            version: 3,
        };
        let out = &op
            .infer(&[Fact::of_static(ElementType::F32, &[2, 5])])
            .unwrap()[0];
        assert_eq!(out.shape.to_string(), "[2]");
        assert_eq!(
            out.value.as_deref(),
            Some(&Tensor::from_i32(vec![2], vec![2, 5]).unwrap())
        );
        let dynamic = &op.infer(&[Fact::unknown()]).unwrap()[0];
        assert_eq!(dynamic.shape.to_string(), "[?]");
        assert!(dynamic.value.is_none());
    }
}
