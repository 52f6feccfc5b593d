//! Unsqueeze-1: inserts dims of size 1 at the given axes of the output (range `[-r_out,
//! r_out-1]` with `r_out = r_in + unique axes`), sharing the data's buffer. Axes may come in
//! any order; repeats collapse.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct Unsqueeze;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Unsqueeze))
}

/// `dims` with 1s inserted at `axes` of the output.
fn unsqueezed(dims: &[Dim], axes: &[i64]) -> Result<Vec<Dim>, OpError> {
    let mut unique = axes.to_vec();
    unique.sort_unstable();
    unique.dedup();
    // Repeats collapse, but -1 and r_out-1 name the same axis only once normalised.
    let r_out = dims.len() + unique.len();
    let mut ones: Vec<usize> = unique
        .iter()
        .map(|&a| norm_axis(a, r_out, Some(1), "Unsqueeze-1"))
        .collect::<Result<_, _>>()?;
    ones.sort_unstable();
    ones.dedup();
    let r_out = dims.len() + ones.len();
    let mut out = Vec::with_capacity(r_out);
    let mut src = dims.iter();
    for k in 0..r_out {
        if ones.binary_search(&k).is_ok() {
            out.push(Dim::fixed(1));
        } else if let Some(&d) = src.next() {
            out.push(d);
        } else {
            return Err(OpError::input(
                1,
                codes::AXIS,
                format!(
                    "Unsqueeze-1: axes {axes:?} are out of range for rank {}",
                    dims.len()
                ),
            ));
        }
    }
    Ok(out)
}

impl Op for Unsqueeze {
    fn name(&self) -> &'static str {
        "Unsqueeze-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        let data = &inputs[0];
        let shape = match (data.shape.dims(), known_ints(&inputs[1])) {
            (Some(dims), Some(axes)) => PartialShape::new(unsqueezed(dims, &axes)?),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, axes] = take_inputs::<2>(inputs, self.name())?;
        let dims: Vec<Dim> = data.shape().iter().map(|&d| Dim::fixed(d as u64)).collect();
        let shape: Vec<usize> = unsqueezed(&dims, &ints(&axes, 1)?)?
            .iter()
            .map(|d| d.min() as usize)
            .collect();
        let out = data
            .with_shape(shape)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn axes_of_the_output_rank() {
        let u = |data: &str, axes: &[i64]| {
            infer1(&Unsqueeze, &[fact(F32, data), i64_value(axes)]).map(|f| f.shape.to_string())
        };
        assert_eq!(u("3,2", &[3, 0]).unwrap(), "[1,3,2,1]");
        assert_eq!(u("3,2", &[0, 0]).unwrap(), "[1,3,2]");
        assert_eq!(u("", &[0]).unwrap(), "[1]");
        assert_eq!(u("3,?", &[-1]).unwrap(), "[3,?,1]");
        assert_eq!(u("3", &[5]).unwrap_err().code, codes::AXIS);
    }

    #[test]
    fn shares_the_buffer() {
        let x = Arc::new(f32s(&[2], &[1., 2.]));
        let out = Unsqueeze
            .eval(vec![x.clone(), Arc::new(i64s(&[], &[0]))])
            .unwrap();
        assert_eq!(out[0].shape(), &[1, 2]);
        assert!(out[0].shares_storage_with(&x));
    }
}
