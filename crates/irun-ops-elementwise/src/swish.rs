//! Swish-4: `x * sigmoid(beta * x)`. The optional second input `beta` is a rank-0 tensor of
//! x's type (a one-element 1-D tensor is rejected, as OpenVINO does); absent, beta is 1.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::binary::same_element_type;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::unary::{map_in_place, map_slices_in_place, unsupported, Real};

#[derive(Debug)]
pub struct Swish;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Swish))
}

#[inline(always)]
fn swish<R: Real>(x: R, beta: R) -> R {
    x / (R::c(1.0) + (-(beta * x)).exp())
}

impl Op for Swish {
    fn name(&self) -> &'static str {
        "Swish-4"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 1, 2, "Swish-4")?;
        let slots: Vec<usize> = (0..inputs.len()).collect();
        let ty = same_element_type(inputs, &slots, "Swish-4")?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("Swish-4 input must be a floating-point type, got {ty}"),
            ));
        }
        if let Some(beta) = inputs.get(1) {
            if beta.rank().is_some_and(|r| r != 0) {
                return Err(OpError::input(
                    1,
                    codes::RANK,
                    format!(
                        "Swish-4 beta must be a scalar (rank 0), got shape {}",
                        beta.shape
                    ),
                ));
            }
        }
        Ok(vec![Fact::new(ty, inputs[0].shape.clone())])
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, mut inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let beta = if inputs.len() == 2 {
            inputs.pop()
        } else {
            None
        };
        let x = inputs
            .pop()
            .ok_or_else(|| OpError::new(codes::ARITY, "Swish-4 takes 1 or 2 inputs"))?;
        let beta_f64 = |t: &Value| -> Result<f64, OpError> {
            let b = t.storage();
            let v = match b {
                irun_tensor::Storage::F32(v) => v.first().map(|&x| x as f64),
                irun_tensor::Storage::F64(v) => v.first().copied(),
                irun_tensor::Storage::F16(v) => v.first().map(|x| x.to_f64()),
                irun_tensor::Storage::Bf16(v) => v.first().map(|x| x.to_f64()),
                _ => None,
            };
            v.ok_or_else(|| OpError::input(1, codes::RUN_SHAPE, "beta must hold one float value"))
        };
        let beta = match &beta {
            Some(t) => beta_f64(t)?,
            None => 1.0,
        };
        let out = match x.element_type() {
            // Vectorised (rten-vecmath, within a few ULP of `swish`, as Sigmoid-1 is): the
            // scalar `exp` made MoE's eight Swish layers 22% of its run.
            ElementType::F32 => map_slices_in_place(x, |s| {
                let op = rten_vecmath::Swish { alpha: beta as f32 };
                rten_simd::SimdUnaryOp::map_mut(&op, s);
            }),
            ElementType::F64 => map_in_place::<f64>(x, |v| swish(v, beta)),
            ElementType::F16 => {
                map_in_place::<f16>(x, |v| f16::from_f32(swish(v.to_f32(), beta as f32)))
            }
            ElementType::Bf16 => {
                map_in_place::<bf16>(x, |v| bf16::from_f32(swish(v.to_f32(), beta as f32)))
            }
            ty => Err(unsupported("Swish-4", ty)),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// f32 runs vectorised: within 4 ULP of the definition over the range where the
    /// exponential matters (within 1e-12 where the result is nearly 0, far out on the negative
    /// side) and at both tails; f64 is the definition itself.
    #[test]
    fn with_and_without_beta() {
        let xs: Vec<f32> = (-400..=400)
            .map(|i| i as f32 * 0.05)
            .chain([-100., 100.])
            .collect();
        for beta in [None, Some(0.5f32), Some(1.7)] {
            let mut inputs = vec![f32s(&[xs.len()], &xs)];
            inputs.extend(beta.map(|b| f32s(&[], &[b])));
            let out = run(&Swish, inputs).unwrap();
            let b = f64::from(beta.unwrap_or(1.0));
            for (&x, &got) in xs.iter().zip(out.values::<f32>().unwrap()) {
                let x = f64::from(x);
                let want = x / (1.0 + (-b * x).exp());
                let tol = (4.0 * f64::from(f32::EPSILON) * want.abs()).max(1e-12);
                assert!(
                    (f64::from(got) - want).abs() <= tol,
                    "x={x} beta={b}: {got} vs {want}"
                );
            }
        }
        let out = run(&Swish, vec![f64s(&[1], &[2.]), f64s(&[], &[0.5])]).unwrap();
        assert_eq!(out, f64s(&[1], &[2. / (1. + (-1f64).exp())]));
    }

    #[test]
    fn beta_must_be_rank_0() {
        let e = infer_err(&Swish, &[fact(F32, "2"), fact(F32, "1")]);
        assert_eq!(e.code, codes::RANK);
        assert!(infer1(&Swish, &[fact(F32, "2,?"), fact(F32, "")]).is_ok());
    }
}
