//! Reshape-1: the data under the shape given by input 1, sharing the data's buffer (no copy).
//! `special_zero` (required by the spec; omitted, false, as the IR loader reads it): a 0 copies
//! the input dim at the same position; otherwise 0 is a literal size. At most one -1, which
//! takes the remaining element count (1 when the others' product is 0 and data is empty).
//! The element count must not change.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::{expect_int_type, fixed, ints, known_ints, shape_text};

#[derive(Debug)]
pub struct Reshape {
    pub special_zero: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Reshape {
        special_zero: a.bool_or("special_zero", false)?,
    }))
}

impl Reshape {
    /// The output dims for `spec` over data dims `data` (static, or per-dim partial).
    fn target(&self, data: Option<&[Dim]>, spec: &[i64]) -> Result<Vec<Dim>, OpError> {
        let bad = |m: String| OpError::input(1, codes::BAD_VALUE, m);
        if spec.iter().filter(|&&v| v == -1).count() > 1 {
            return Err(bad(format!(
                "Reshape-1: more than one -1 in the target shape {spec:?}"
            )));
        }
        let mut out: Vec<Option<Dim>> = Vec::with_capacity(spec.len());
        for (i, &v) in spec.iter().enumerate() {
            out.push(match v {
                -1 => None,
                0 if self.special_zero => match data {
                    Some(d) => Some(*d.get(i).ok_or_else(|| {
                        bad(format!(
                            "Reshape-1: special_zero copies dim {i}, but the data has rank {}",
                            d.len()
                        ))
                    })?),
                    None => Some(Dim::DYNAMIC),
                },
                v if v < -1 => return Err(bad(format!("Reshape-1: dim {v} in the target shape"))),
                v => Some(Dim::fixed(v as u64)),
            });
        }
        let data_count: Option<u64> = data.and_then(|d| {
            d.iter()
                .try_fold(1u64, |acc, x| acc.checked_mul(x.get_static()?))
        });
        let known: Option<u64> = out
            .iter()
            .flatten()
            .try_fold(1u64, |acc, x| acc.checked_mul(x.get_static()?));
        let mismatch = || {
            let data = data.map_or("?".to_string(), |d| {
                PartialShape::new(d.to_vec()).to_string()
            });
            OpError::input(
                1,
                codes::SHAPE,
                format!("Requested output shape {spec:?} is incompatible with input shape {data}"),
            )
        };
        if let Some(slot) = out.iter().position(Option::is_none) {
            out[slot] = Some(match (data_count, known) {
                (Some(0), Some(0)) => Dim::fixed(1),
                (Some(_), Some(0)) => return Err(mismatch()),
                (Some(n), Some(k)) if n % k == 0 => Dim::fixed(n / k),
                (Some(_), Some(_)) => return Err(mismatch()),
                _ => Dim::DYNAMIC,
            });
        } else if let (Some(n), Some(k)) = (data_count, known) {
            if n != k {
                return Err(mismatch());
            }
        }
        Ok(out
            .into_iter()
            .map(|d| d.expect("every slot is filled"))
            .collect())
    }
}

impl Op for Reshape {
    fn name(&self) -> &'static str {
        "Reshape-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        let (data, shape) = (&inputs[0], &inputs[1]);
        if let Some(r) = shape.rank().filter(|&r| r > 1) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("Reshape-1: the shape input must be 1-D, got rank {r}"),
            ));
        }
        let out = match known_ints(shape) {
            Some(spec) => PartialShape::new(self.target(data.shape.dims(), &spec)?),
            None => match shape
                .shape
                .dims()
                .and_then(|d| d.first().and_then(|d| d.get_static()))
            {
                Some(n) => PartialShape::dynamic_of_rank(n as usize),
                None if shape.rank() == Some(0) => PartialShape::fixed(&[]),
                None => PartialShape::dynamic_rank(),
            },
        };
        Ok(vec![Fact::new(data.ty, out)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, shape] = take_inputs::<2>(inputs, self.name())?;
        let spec = ints(&shape, 1)?;
        let dims: Vec<Dim> = data.shape().iter().map(|&d| fixed(d)).collect();
        let target: Vec<usize> = self
            .target(Some(&dims), &spec)?
            .iter()
            .map(|d| d.get_static().unwrap_or(0) as usize)
            .collect();
        let out = data.with_shape(target.clone()).map_err(|_| {
            OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "Reshape-1: {} values cannot take shape {}",
                    data.len(),
                    shape_text(&target)
                ),
            )
        })?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn reshape(special_zero: bool) -> Reshape {
        Reshape { special_zero }
    }

    #[test]
    fn infers_minus_one_and_special_zero() {
        let r = |sz, data: &str, spec: &[i64]| {
            infer1(&reshape(sz), &[fact(F32, data), i64_value(spec)]).map(|f| f.shape.to_string())
        };
        assert_eq!(r(false, "2,3,4", &[6, -1]).unwrap(), "[6,4]");
        assert_eq!(r(true, "2,3,4", &[0, -1]).unwrap(), "[2,12]");
        assert_eq!(r(false, "0,3", &[0, -1]).unwrap(), "[0,1]");
        assert_eq!(r(false, "0,3", &[-1, 0]).unwrap(), "[1,0]");
        assert_eq!(r(true, "?,3", &[0, 3]).unwrap(), "[?,3]");
        assert_eq!(r(false, "?,3", &[-1, 3]).unwrap(), "[?,3]");
        assert_eq!(r(false, "2,3", &[]).unwrap_err().code, codes::SHAPE);
        assert_eq!(r(false, "1", &[]).unwrap(), "[]");
    }

    #[test]
    fn element_count_must_match() {
        let e = infer1(&reshape(false), &[fact(F32, "2,3"), i64_value(&[4, 2])]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        assert_eq!(
            e.message,
            "Requested output shape [4, 2] is incompatible with input shape [2,3]"
        );
        let e = infer1(&reshape(false), &[fact(F32, "2,3"), i64_value(&[-1, -1])]).unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
        let e = infer1(&reshape(false), &[fact(F32, "2,3"), i64_value(&[7, -1])]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }

    #[test]
    fn output_shares_the_input_buffer() {
        let x = Arc::new(f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]));
        let out = reshape(true)
            .eval(vec![x.clone(), Arc::new(i64s(&[2], &[3, -1]))])
            .unwrap();
        assert_eq!(out[0].shape(), &[3, 2]);
        assert!(out[0].shares_storage_with(&x));
        let e = reshape(false)
            .eval(vec![x, Arc::new(i64s(&[1], &[5]))])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
