//! Split-1: `num_splits` equal parts of the data along `axis` (input 1, a rank-0 integer; a
//! one-element 1-D tensor is rejected, as OpenVINO does). The axis dim must divide evenly.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct Split {
    pub num_splits: usize,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let attr = a.required("num_splits")?;
    let num_splits = attr
        .value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            OpError::attribute(
                "num_splits",
                format!("`num_splits=\"{}\"` is not a positive integer", attr.value),
            )
        })?;
    // One output per split: more than the layer declares cannot be wired, and a huge count
    // would be allocated as that many output facts (found by fuzzing: a capacity overflow).
    let declared = a.layer.outputs.len();
    if num_splits > declared {
        return Err(OpError::attribute(
            "num_splits",
            format!("`num_splits=\"{num_splits}\"` is more than the {declared} output port(s) the layer declares"),
        ));
    }
    Ok(Box::new(Split { num_splits }))
}

/// The axis of a Split or VariadicSplit: input 1, rank 0.
pub fn split_axis(inputs: &[Fact], op: &str) -> Result<Option<i64>, OpError> {
    expect_int_type(inputs, 1, op)?;
    if let Some(r) = inputs[1].rank().filter(|&r| r != 0) {
        return Err(OpError::input(
            1,
            codes::RANK,
            format!("{op}: the axis must be a scalar (rank 0), got rank {r}"),
        ));
    }
    Ok(known_ints(&inputs[1]).and_then(|v| v.first().copied()))
}

/// The outputs of cutting `data` along `axis` into parts of `lengths`.
pub fn cut(data: &Value, axis: usize, lengths: &[usize], op: &str) -> Result<Vec<Value>, OpError> {
    let shape = data.shape();
    let strides = crate::strided::row_major_strides(shape);
    let mut at = 0usize;
    let mut outs = Vec::with_capacity(lengths.len());
    for &len in lengths {
        let mut out_shape = shape.to_vec();
        out_shape[axis] = len;
        let layout = crate::strided::Strided {
            base: at as isize * strides[axis],
            out_shape,
            strides: strides.clone(),
        };
        let words = layout.apply(data, op)?;
        outs.push(crate::util::output(
            data.element_type(),
            layout.out_shape,
            words,
        )?);
        at += len;
    }
    Ok(outs)
}

impl Op for Split {
    fn name(&self) -> &'static str {
        "Split-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let data = &inputs[0];
        let axis = split_axis(inputs, self.name())?;
        let shape = match (data.shape.dims(), axis) {
            (Some(dims), Some(a)) => {
                let k = norm_axis(a, dims.len(), Some(1), self.name())?;
                let mut out = dims.to_vec();
                out[k] = match dims[k].get_static() {
                    Some(d) if d % self.num_splits as u64 != 0 => {
                        return Err(OpError::input(
                            0,
                            codes::SHAPE,
                            format!(
                                "Split-1: dim {k} of {} ({d}) is not divisible by num_splits {}",
                                data.shape, self.num_splits
                            ),
                        ))
                    }
                    Some(d) => Dim::fixed(d / self.num_splits as u64),
                    None => Dim::DYNAMIC,
                };
                PartialShape::new(out)
            }
            (Some(dims), None) => PartialShape::dynamic_of_rank(dims.len()),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape); self.num_splits])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, axis] = take_inputs::<2>(inputs, self.name())?;
        let a = *ints(&axis, 1)?
            .first()
            .ok_or_else(|| OpError::input(1, codes::RUN_SHAPE, "Split-1: empty axis"))?;
        let k = norm_axis(a, data.shape().len(), Some(1), self.name())?;
        let d = data.shape()[k];
        if d % self.num_splits != 0 {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "Split-1: dim {k} ({d}) is not divisible by {}",
                    self.num_splits
                ),
            ));
        }
        cut(
            &data,
            k,
            &vec![d / self.num_splits; self.num_splits],
            self.name(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn equal_parts() {
        let x = f32s(&[2, 4], &[1., 2., 3., 4., 5., 6., 7., 8.]);
        let out = run(&Split { num_splits: 2 }, vec![x, i64s(&[], &[-1])]).unwrap();
        assert_eq!(
            out,
            vec![
                f32s(&[2, 2], &[1., 2., 5., 6.]),
                f32s(&[2, 2], &[3., 4., 7., 8.])
            ]
        );
        let f = Split { num_splits: 3 }
            .infer(&[fact(F32, "2,6"), i64_scalar(1)])
            .unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[2].shape.to_string(), "[2,2]");
        let e = Split { num_splits: 4 }
            .infer(&[fact(F32, "2,6"), i64_scalar(1)])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = Split { num_splits: 2 }
            .infer(&[fact(F32, "2,6"), i64_value(&[1])])
            .unwrap_err();
        assert_eq!(e.code, codes::RANK, "a one-element 1-D axis is rejected");
    }
}
