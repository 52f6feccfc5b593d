//! Range-4: `start, start + step, ...` below `stop` (above, for a negative step), in
//! `output_type` (required). Inputs are rank-0 scalars of any numeric types. With an integer
//! output type the inputs are first truncated toward 0 to it (f32 `0.5, 5.2, 1.5` with i32 gives
//! `0..5 step 1`). The length is `max(ceil((stop - start) / step), 0)` in f64; a step that
//! is (or truncates to) 0 gives an empty output, as OpenVINO does (the spec leaves it
//! undefined). Value `i` is `start + i * step` in the output type.

use std::sync::Arc;

use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct Range {
    pub output_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let output_type = a.element_type("output_type")?;
    if !output_type.is_real() && !output_type.is_integral_number() {
        return Err(OpError::attribute(
            "output_type",
            format!("Range-4 output_type must be numeric, got {output_type}"),
        ));
    }
    Ok(Box::new(Range { output_type }))
}

/// The scalar value of input `slot` as f64 (integers up to 2^53 exactly).
fn scalar(t: &Tensor, slot: usize) -> Result<f64, OpError> {
    let bad = || {
        OpError::input(
            slot,
            codes::BAD_VALUE,
            format!("Range-4: input {slot} must hold one number"),
        )
    };
    if t.len() != 1 {
        return Err(bad());
    }
    with_number!(t.element_type(), T => Ok(t.values::<T>().ok_or_else(bad)?[0].to_f64()), else Err(bad()))
}

/// The numeric types as f64 and back (`as` semantics: integers saturate, NaN gives 0).
trait AsF64: Scalar {
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

macro_rules! as_f64 {
    ($($t:ty),*) => {$(
        impl AsF64 for $t {
            fn to_f64(self) -> f64 { self as f64 }
            fn from_f64(x: f64) -> Self { x as $t }
        }
    )*};
}
as_f64!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

impl AsF64 for irun_tensor::f16 {
    fn to_f64(self) -> f64 {
        irun_tensor::f16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        irun_tensor::f16::from_f64(x)
    }
}

impl AsF64 for irun_tensor::bf16 {
    fn to_f64(self) -> f64 {
        irun_tensor::bf16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        irun_tensor::bf16::from_f64(x)
    }
}

/// `(start, step, length)` after the output type's truncation.
fn plan(start: f64, stop: f64, step: f64, ty: ElementType) -> (f64, f64, usize) {
    let (start, stop, step) = if ty.is_real() {
        (start, stop, step)
    } else {
        (start.trunc(), stop.trunc(), step.trunc())
    };
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        return (start, step, 0);
    }
    let n = ((stop - start) / step).ceil();
    (start, step, if n > 0.0 { n as usize } else { 0 })
}

impl Op for Range {
    fn name(&self) -> &'static str {
        "Range-4"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[0, 1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        for (slot, f) in inputs.iter().enumerate() {
            if f.rank().is_some_and(|r| r > 1)
                || f.shape
                    .to_static()
                    .is_some_and(|s| s.iter().product::<usize>() != 1)
            {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("Range-4: input {slot} must be a scalar, got {}", f.shape),
                ));
            }
        }
        let values: Option<Vec<f64>> = inputs
            .iter()
            .enumerate()
            .map(|(i, f)| f.value.as_ref().and_then(|v| scalar(v, i).ok()))
            .collect();
        let dim = match values {
            Some(v) => Dim::fixed(plan(v[0], v[1], v[2], self.output_type).2 as u64),
            None => Dim::DYNAMIC,
        };
        Ok(vec![Fact::new(
            self.output_type,
            PartialShape::new(vec![dim]),
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [a, b, c] = take_inputs::<3>(inputs, self.name())?;
        let (start, step, n) = plan(
            scalar(&a, 0)?,
            scalar(&b, 1)?,
            scalar(&c, 2)?,
            self.output_type,
        );
        let ty = self.output_type;
        let out = with_number!(ty, T => {
            let v: Vec<T> = (0..n).map(|i| T::from_f64(start + i as f64 * step)).collect();
            Tensor::new(ty, vec![n], T::wrap(v))
        }, else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("Range-4 to {ty}"))))
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ty: ElementType, a: Tensor, b: Tensor, c: Tensor) -> Tensor {
        let out = Range { output_type: ty }
            .eval(vec![Arc::new(a), Arc::new(b), Arc::new(c)])
            .unwrap();
        Arc::unwrap_or_clone(out.into_iter().next().unwrap())
    }

    fn f32s(v: f32) -> Tensor {
        Tensor::from_f32(vec![], vec![v]).unwrap()
    }

    #[test]
    fn truncates_for_integer_outputs() {
        let out = run(ElementType::I32, f32s(0.5), f32s(5.2), f32s(1.5));
        assert_eq!(out.values::<i32>().unwrap(), &[0, 1, 2, 3, 4]);
        let out = run(ElementType::F32, f32s(0.0), f32s(1.0), f32s(0.1));
        assert_eq!(out.len(), 10);
        let out = run(ElementType::I64, f32s(5.0), f32s(0.0), f32s(-2.0));
        assert_eq!(out.values::<i64>().unwrap(), &[5, 3, 1]);
        let out = run(ElementType::I32, f32s(0.0), f32s(5.0), f32s(0.4));
        assert_eq!(out.len(), 0, "a step truncated to 0");
    }
}
