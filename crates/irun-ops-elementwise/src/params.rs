//! Unary float ops whose formula also takes two one-element inputs (HardSigmoid's `alpha` and
//! `beta`, Selu's `alpha` and `lambda`): inference checks them (the data's element type, one
//! value each), the kernel reads them once and maps the data as a unary op does (f16/bf16 in
//! f32, rounded once; in place when the data's buffer is handed over).

use std::fmt::Debug;
use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{ElementType, Tensor};

use crate::fact::Fact;
use crate::op::{codes, expect_inputs, same_element_type, take_inputs, Op, OpError, Value};
use crate::unary::{map_in_place, unsupported, Real};

/// The formula of an op with two scalar parameters.
pub trait ParamKind: Debug + Send + Sync + 'static {
    /// `Type-vN`.
    const NAME: &'static str;
    /// The names of inputs 1 and 2, for messages.
    const PARAMS: [&'static str; 2];
    fn real<R: Real>(x: R, a: R, b: R) -> R;
}

/// The op of kind `K`.
#[derive(Debug, Default)]
pub struct WithParams<K>(pub K);

impl<K: ParamKind> Op for WithParams<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, K::NAME)?;
        let ty = same_element_type(inputs, &[0, 1, 2], K::NAME)?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{}: data must be a floating-point type, got {ty}", K::NAME),
            ));
        }
        for (slot, name) in [(1, K::PARAMS[0]), (2, K::PARAMS[1])] {
            let shape = &inputs[slot].shape;
            if let Some(dims) = shape
                .to_static()
                .filter(|d| d.iter().product::<usize>() != 1)
            {
                return Err(OpError::input(
                    slot,
                    codes::SHAPE,
                    format!(
                        "{}: {name} must hold one value, got shape {dims:?}",
                        K::NAME
                    ),
                ));
            }
        }
        Ok(vec![Fact::new(ty, inputs[0].shape.clone())])
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, a, b] = take_inputs::<3>(inputs, K::NAME)?;
        let (a, b) = (param::<K>(&a, 1)?, param::<K>(&b, 2)?);
        let (a32, b32) = (a as f32, b as f32);
        let out = match x.element_type() {
            ElementType::F32 => map_in_place::<f32>(x, |v| K::real(v, a32, b32)),
            ElementType::F64 => map_in_place::<f64>(x, |v| K::real(v, a, b)),
            ElementType::F16 => {
                map_in_place::<f16>(x, |v| f16::from_f32(K::real(v.to_f32(), a32, b32)))
            }
            ElementType::Bf16 => {
                map_in_place::<bf16>(x, |v| bf16::from_f32(K::real(v.to_f32(), a32, b32)))
            }
            ty => Err(unsupported(K::NAME, ty)),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

/// The one value of input `slot`, exactly as f64.
fn param<K: ParamKind>(t: &Tensor, slot: usize) -> Result<f64, OpError> {
    let name = K::PARAMS[slot - 1];
    let one = |v: Option<f64>| {
        v.filter(|_| t.len() == 1).ok_or_else(|| {
            OpError::input(
                slot,
                codes::RUN_SHAPE,
                format!(
                    "{}: {name} must be one float value, got {} {:?}",
                    K::NAME,
                    t.element_type(),
                    t.shape()
                ),
            )
        })
    };
    one(match t.element_type() {
        ElementType::F32 => t.values::<f32>().and_then(|v| v.first()).map(|&v| v as f64),
        ElementType::F64 => t.values::<f64>().and_then(|v| v.first()).copied(),
        ElementType::F16 => t
            .values::<f16>()
            .and_then(|v| v.first())
            .map(|v| v.to_f64()),
        ElementType::Bf16 => t
            .values::<bf16>()
            .and_then(|v| v.first())
            .map(|v| v.to_f64()),
        _ => None,
    })
}
