//! What IsNaN-10, IsInf-10 and IsFinite-10 share: a float input (f16, bf16, f32, f64) and a
//! boolean output of its shape, each value classified exactly (widening to f64 keeps NaN and
//! the infinities).

use std::fmt::Debug;
use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{ElementType, PartialShape, Tensor};

use crate::binary::internal;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::unary::unsupported;

/// The test of one op.
pub trait FloatClass: Debug + Send + Sync + 'static {
    const NAME: &'static str;
    fn test(&self, x: f64) -> bool;
}

/// The op of kind `K`.
#[derive(Debug, Default)]
pub struct Classify<K>(pub K);

impl<K: FloatClass> Op for Classify<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, K::NAME)?;
        let f = &inputs[0];
        if !matches!(
            f.ty,
            ElementType::F16 | ElementType::Bf16 | ElementType::F32 | ElementType::F64
        ) && f.ty != ElementType::Dynamic
        {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!(
                    "{}: input must be f16, bf16, f32 or f64, got {}",
                    K::NAME,
                    f.ty
                ),
            ));
        }
        let shape: PartialShape = f.shape.clone();
        Ok(vec![Fact::new(ElementType::Boolean, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, K::NAME)?;
        let k = &self.0;
        let bad = || unsupported(K::NAME, x.element_type());
        let out: Vec<bool> = match x.element_type() {
            ElementType::F32 => par::map(x.values::<f32>().ok_or_else(bad)?, |v| k.test(v as f64)),
            ElementType::F64 => par::map(x.values::<f64>().ok_or_else(bad)?, |v| k.test(v)),
            ElementType::F16 => {
                par::map(x.values::<f16>().ok_or_else(bad)?, |v| k.test(v.to_f64()))
            }
            ElementType::Bf16 => {
                par::map(x.values::<bf16>().ok_or_else(bad)?, |v| k.test(v.to_f64()))
            }
            _ => return Err(bad()),
        };
        let t = Tensor::from_bool(x.shape().to_vec(), out).map_err(internal)?;
        Ok(vec![Arc::new(t)])
    }
}
