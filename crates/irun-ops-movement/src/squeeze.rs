//! Squeeze-1 and Squeeze-15: remove dims of size 1, sharing the data's buffer. Without axes
//! (or with an empty axes tensor) every 1 goes; with axes, each listed dim of size 1 goes and
//! a listed dim of another size is kept (the spec since 2024.3). Axes may be negative and
//! repeat; one out of range is an error. Squeeze-15's `allow_axis_skip` only changes
//! OpenVINO's inference of a listed dynamic dim that may be 1 (a dynamic rank rather than
//! the dim assumed 1); irun gives the dynamic rank for both versions, and the values are the
//! same.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct Squeeze {
    name: &'static str,
}

const V1: Squeeze = Squeeze { name: "Squeeze-1" };

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(V1))
}

pub fn build_v15(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.bool_or("allow_axis_skip", false)?;
    Ok(Box::new(Squeeze { name: "Squeeze-15" }))
}

/// Which of `dims` stay: `None` when an axis-less squeeze meets a dim that may or may not be
/// 1 (the output rank is then unknown).
fn kept(dims: &[Dim], axes: Option<&[i64]>, op: &str) -> Result<Option<Vec<bool>>, OpError> {
    let one = Dim::fixed(1);
    match axes {
        None | Some([]) => {
            if dims.iter().any(|&d| d != one && d.contains(1)) {
                return Ok(None);
            }
            Ok(Some(dims.iter().map(|&d| d != one).collect()))
        }
        Some(axes) => {
            let mut keep = vec![true; dims.len()];
            for &a in axes {
                let k = norm_axis(a, dims.len(), Some(1), op)?;
                if dims[k] == one {
                    keep[k] = false;
                } else if dims[k].contains(1) {
                    return Ok(None);
                }
            }
            Ok(Some(keep))
        }
    }
}

impl Op for Squeeze {
    fn name(&self) -> &'static str {
        self.name
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 1, 2, self.name)?;
        if inputs.len() == 2 {
            expect_int_type(inputs, 1, self.name())?;
        }
        let data = &inputs[0];
        let axes = inputs.get(1).map(known_ints);
        let shape = match (data.shape.dims(), axes) {
            (Some(dims), None) => match kept(dims, None, self.name)? {
                Some(keep) => PartialShape::new(select(dims, &keep)),
                None => PartialShape::dynamic_rank(),
            },
            (Some(dims), Some(Some(axes))) => match kept(dims, Some(&axes), self.name)? {
                Some(keep) => PartialShape::new(select(dims, &keep)),
                None => PartialShape::dynamic_rank(),
            },
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let data = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, format!("{} needs data", self.name)))?;
        let axes = inputs.get(1).map(|a| ints(a, 1)).transpose()?;
        let dims: Vec<Dim> = data.shape().iter().map(|&d| Dim::fixed(d as u64)).collect();
        let keep = kept(&dims, axes.as_deref(), self.name)?.expect("static dims are decided");
        let shape: Vec<usize> = data
            .shape()
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(&d, _)| d)
            .collect();
        let out = data
            .with_shape(shape)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

fn select(dims: &[Dim], keep: &[bool]) -> Vec<Dim> {
    dims.iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&d, _)| d)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn with_and_without_axes() {
        let s = |data: &str, axes: Option<&[i64]>| {
            let mut inputs = vec![fact(F32, data)];
            if let Some(a) = axes {
                inputs.push(i64_value(a));
            }
            infer1(&V1, &inputs).map(|f| f.shape.to_string())
        };
        assert_eq!(s("1,3,1,2", None).unwrap(), "[3,2]");
        assert_eq!(s("1,3,1,2", Some(&[])).unwrap(), "[3,2]");
        assert_eq!(s("1,3,1,2", Some(&[-2])).unwrap(), "[1,3,2]");
        assert_eq!(
            s("1,3,1,2", Some(&[1])).unwrap(),
            "[1,3,1,2]",
            "a non-1 dim is kept"
        );
        assert_eq!(s("1,1", None).unwrap(), "[]");
        assert_eq!(s("1,?", None).unwrap(), "[...]");
        assert_eq!(s("1,2", Some(&[0, 0])).unwrap(), "[2]");
        assert_eq!(s("1,2", Some(&[2])).unwrap_err().code, codes::AXIS);
    }

    #[test]
    fn version_15_reads_allow_axis_skip_and_squeezes_alike() {
        let v15 = Squeeze { name: "Squeeze-15" };
        let x = Arc::new(f32s(&[1, 2, 1], &[1., 2.]));
        let axes = Arc::new(irun_tensor::Tensor::from_i64(vec![2], vec![1, -1]).unwrap());
        let out = v15.eval(vec![x, axes]).unwrap();
        assert_eq!(
            out[0].shape(),
            &[1, 2],
            "the listed 2 stays, the listed 1 goes"
        );
        let dynamic = infer1(&v15, &[fact(F32, "?,2"), i64_value(&[0])]).unwrap();
        assert_eq!(dynamic.shape.to_string(), "[...]");
    }

    #[test]
    fn shares_the_buffer() {
        let x = Arc::new(f32s(&[1, 2, 1], &[1., 2.]));
        let out = V1.eval(vec![x.clone()]).unwrap();
        assert_eq!(out[0].shape(), &[2]);
        assert!(out[0].shares_storage_with(&x));
    }
}
