//! Transpose-1: `out.shape[i] = in.shape[order[i]]`; an empty `order` reverses the axes;
//! otherwise `order` must be a permutation of `0..rank` (negatives and repeats are invalid).
//! A copy through the strided kernel; when the permutation moves no dim of size above 1, the
//! output shares the input's buffer.

use std::sync::Arc;

use irun_tensor::PartialShape;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::strided::Strided;
use crate::util::{expect_int_type, ints, known_ints, output};

#[derive(Debug)]
pub struct Transpose;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Transpose))
}

/// `order` checked as a permutation of `0..rank` (empty: reversed).
fn permutation(order: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
    if order.is_empty() {
        return Ok((0..rank).rev().collect());
    }
    let mut seen = vec![false; rank];
    let ok = order.len() == rank
        && order.iter().all(|&o| {
            usize::try_from(o)
                .ok()
                .filter(|&o| o < rank)
                .is_some_and(|o| !std::mem::replace(&mut seen[o], true))
        });
    if !ok {
        return Err(OpError::input(
            1,
            codes::BAD_VALUE,
            format!("Transpose-1: order {order:?} is not a permutation of the axes of a rank-{rank} input"),
        ));
    }
    Ok(order.iter().map(|&o| o as usize).collect())
}

impl Op for Transpose {
    fn name(&self) -> &'static str {
        "Transpose-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        let data = &inputs[0];
        let shape = match (data.shape.dims(), known_ints(&inputs[1])) {
            (Some(dims), Some(order)) => {
                let p = permutation(&order, dims.len())?;
                PartialShape::new(p.iter().map(|&i| dims[i]).collect())
            }
            (Some(dims), None) => PartialShape::dynamic_of_rank(dims.len()),
            (None, Some(order)) if !order.is_empty() => PartialShape::dynamic_of_rank(order.len()),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, order] = take_inputs::<2>(inputs, self.name())?;
        let p = permutation(&ints(&order, 1)?, data.shape().len())?;
        let layout = Strided::permuted(data.shape(), &p);
        // Only dims of size 1 move: the values are already in output order.
        let moved: Vec<usize> = p.iter().copied().filter(|&i| data.shape()[i] > 1).collect();
        if moved.windows(2).all(|w| w[0] < w[1]) {
            let out = data
                .with_shape(layout.out_shape)
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![Arc::new(out)]);
        }
        let words = layout.apply(&data, self.name())?;
        Ok(vec![output(data.element_type(), layout.out_shape, words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn permutes_and_reverses() {
        let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let out = run(&Transpose, vec![x.clone(), i64s(&[2], &[1, 0])]).unwrap();
        assert_eq!(out[0], f32s(&[3, 2], &[1., 4., 2., 5., 3., 6.]));
        let out = run(&Transpose, vec![x, i64s(&[0], &[])]).unwrap();
        assert_eq!(out[0].shape(), &[3, 2]);
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let out = run(
            &Transpose,
            vec![f32s(&[2, 3, 4], &x), i64s(&[3], &[2, 0, 1])],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[4, 2, 3]);
        // out[k][i][j] = x[i][j][k]; here k = 1, i = 1, j = 2.
        assert_eq!(
            out[0].values::<f32>().unwrap()[6 + 3 + 2],
            x[12 + 2 * 4 + 1]
        );
    }

    #[test]
    fn moving_only_unit_dims_shares_the_buffer() {
        let x = Arc::new(f32s(&[1, 3], &[1., 2., 3.]));
        let out = Transpose
            .eval(vec![x.clone(), Arc::new(i64s(&[2], &[1, 0]))])
            .unwrap();
        assert_eq!(out[0].shape(), &[3, 1]);
        assert!(out[0].shares_storage_with(&x));
    }

    #[test]
    fn order_must_be_a_permutation() {
        for bad in [&[0, 0][..], &[0, -1], &[0, 2], &[0]] {
            let e = infer1(&Transpose, &[fact(F32, "2,3"), i64_value(bad)]).unwrap_err();
            assert_eq!(e.code, codes::BAD_VALUE, "{bad:?}");
        }
        let f = infer1(&Transpose, &[fact(F32, "2,?,4"), i64_value(&[2, 0, 1])]).unwrap();
        assert_eq!(f.shape.to_string(), "[4,2,?]");
    }
}
