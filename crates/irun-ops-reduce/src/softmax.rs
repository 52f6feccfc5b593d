//! SoftMax-1 and SoftMax-8: `e^(x - max) / sum e^(x - max)` along `axis`. v1: axis in
//! `[0, r-1]`, and omitted in the IR it is 0 (what OpenVINO's loader reads, though the spec
//! says 1); v8: axis in `[-r, r-1]`, omitted 1. A slice holding +inf or NaN becomes all NaN
//! (the reference; OpenVINO CPU puts NaN at that position only); `[1000, 0]` gives `[1, 0]`.

use std::sync::Arc;

use irun_tensor::ElementType;

use crate::along::{map_rows_f32, map_slices};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::norm_axis;

#[derive(Debug)]
pub struct Softmax {
    pub axis: i64,
    pub version: u32,
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Softmax {
        axis: a.i64_or("axis", Some(0))?,
        version: 1,
    }))
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Softmax {
        axis: a.i64_or("axis", Some(1))?,
        version: 8,
    }))
}

/// The softmax of one slice.
pub fn softmax(x: &[f64], y: &mut [f64]) {
    let max = x.iter().fold(f64::NEG_INFINITY, |m, &v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    });
    let mut sum = 0.0;
    for (d, &v) in y.iter_mut().zip(x) {
        *d = (v - max).exp();
        sum += *d;
    }
    for d in y.iter_mut() {
        *d /= sum;
    }
}

/// `axis` of a rank-`rank` input under the rules of SoftMax-1 (no negatives) or later.
pub fn softmax_axis(axis: i64, rank: usize, version: u32, name: &str) -> Result<usize, OpError> {
    if version == 1 && axis < 0 {
        return Err(OpError::attribute(
            "axis",
            format!("{name}: axis {axis} must be in [0, {}]", rank as i64 - 1),
        )
        .with_code(codes::AXIS));
    }
    norm_axis(axis, rank, None, name)
}

/// The shared inference of SoftMax and LogSoftmax: a float input, its own fact out.
pub fn infer_along(
    inputs: &[Fact],
    axis: i64,
    version: u32,
    name: &str,
) -> Result<Vec<Fact>, OpError> {
    expect_inputs(inputs, 1, name)?;
    let x = &inputs[0];
    if !x.ty.is_real() && x.ty != ElementType::Dynamic {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: input must be a floating-point type, got {}", x.ty),
        ));
    }
    if let Some(r) = x.rank() {
        softmax_axis(axis, r, version, name)?;
    }
    Ok(vec![Fact::new(x.ty, x.shape.clone())])
}

impl Op for Softmax {
    fn name(&self) -> &'static str {
        if self.version == 1 {
            "SoftMax-1"
        } else {
            "SoftMax-8"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_along(inputs, self.axis, self.version, self.name())
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let s = x.shape();
        let k = softmax_axis(self.axis, s.len(), self.version, self.name())?;
        let (outer, along, inner): (usize, usize, usize) =
            (s[..k].iter().product(), s[k], s[k + 1..].iter().product());
        if inner == 1 && x.element_type() == ElementType::F32 {
            let out = map_rows_f32(x, along, &|row| {
                rten_simd::SimdOp::dispatch(rten_vecmath::Softmax::new_mut(row));
            })?;
            return Ok(vec![Arc::new(out)]);
        }
        let out = map_slices(&x, outer, along, inner, &softmax)?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn stable_and_along_the_axis() {
        let op = Softmax {
            axis: -1,
            version: 8,
        };
        let out = run(&op, vec![f32s(&[2, 2], &[1000., 0., 1., 1.])]);
        assert_eq!(out, f32s(&[2, 2], &[1., 0., 0.5, 0.5]));
        let op = Softmax {
            axis: 0,
            version: 1,
        };
        let out = run(&op, vec![f64s(&[2, 1], &[0., 2f64.ln()])]);
        let v = out.values::<f64>().unwrap();
        assert!((v[0] - 1. / 3.).abs() < 1e-15 && (v[1] - 2. / 3.).abs() < 1e-15);
        let out = run(
            &Softmax {
                axis: 0,
                version: 8,
            },
            vec![f32s(&[2], &[f32::INFINITY, 1.])],
        );
        assert!(out.values::<f32>().unwrap().iter().all(|v| v.is_nan()));
    }

    #[test]
    fn v1_rejects_negative_axes() {
        let e = infer1(
            &Softmax {
                axis: -1,
                version: 1,
            },
            &[fact(F32, "2,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::AXIS);
        assert!(infer1(
            &Softmax {
                axis: -1,
                version: 8
            },
            &[fact(F32, "2,3")]
        )
        .is_ok());
        let e = infer1(
            &Softmax {
                axis: 1,
                version: 8,
            },
            &[fact(I32, "2,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }
}
