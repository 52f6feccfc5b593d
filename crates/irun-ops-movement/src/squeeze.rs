//! Squeeze-1: removes dims of size 1, sharing the data's buffer. Without axes (or with an
//! empty axes tensor) every 1 goes; with axes, each listed dim of size 1 goes and a listed dim
//! of another size is kept (the spec since 2024.3). Axes may be negative and repeat; one out of
//! range is an error.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct Squeeze;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Squeeze))
}

/// Which of `dims` stay: `None` when an axis-less squeeze meets a dim that may or may not be
/// 1 (the output rank is then unknown).
fn kept(dims: &[Dim], axes: Option<&[i64]>) -> Result<Option<Vec<bool>>, OpError> {
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
                let k = norm_axis(a, dims.len(), Some(1), "Squeeze-1")?;
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
        "Squeeze-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 1, 2, "Squeeze-1")?;
        if inputs.len() == 2 {
            expect_int_type(inputs, 1, self.name())?;
        }
        let data = &inputs[0];
        let axes = inputs.get(1).map(known_ints);
        let shape = match (data.shape.dims(), axes) {
            (Some(dims), None) => match kept(dims, None)? {
                Some(keep) => PartialShape::new(select(dims, &keep)),
                None => PartialShape::dynamic_rank(),
            },
            (Some(dims), Some(Some(axes))) => match kept(dims, Some(&axes))? {
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
            .ok_or_else(|| OpError::new(codes::ARITY, "Squeeze-1 needs data"))?;
        let axes = inputs.get(1).map(|a| ints(a, 1)).transpose()?;
        let dims: Vec<Dim> = data.shape().iter().map(|&d| Dim::fixed(d as u64)).collect();
        let keep = kept(&dims, axes.as_deref())?.expect("static dims are decided");
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
            infer1(&Squeeze, &inputs).map(|f| f.shape.to_string())
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
    fn shares_the_buffer() {
        let x = Arc::new(f32s(&[1, 2, 1], &[1., 2.]));
        let out = Squeeze.eval(vec![x.clone()]).unwrap();
        assert_eq!(out[0].shape(), &[2]);
        assert!(out[0].shares_storage_with(&x));
    }
}
