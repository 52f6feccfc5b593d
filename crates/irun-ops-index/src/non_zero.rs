//! NonZero-3: the coordinates of the non-zero elements, `[rank, count]`, column j the j-th
//! non-zero in row-major order, in `output_type` (i64 default, or i32). Non-zero is `x != 0`:
//! NaN counts, -0.0 does not. A scalar is rank 1 here: non-zero gives `[[0]]` (1,1), zero
//! gives (1,0) (OpenVINO CPU; the reference gives (0,0)).

use std::sync::Arc;

use irun_tensor::{with_any_scalar, Dim, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct NonZero {
    pub output_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let output_type = match a.get("output_type") {
        None => ElementType::I64,
        Some(_) => a.element_type("output_type")?,
    };
    if !matches!(output_type, ElementType::I32 | ElementType::I64) {
        return Err(OpError::attribute(
            "output_type",
            "NonZero-3 output_type must be i32 or i64",
        ));
    }
    Ok(Box::new(NonZero { output_type }))
}

impl Op for NonZero {
    fn name(&self) -> &'static str {
        "NonZero-3"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let rank = inputs[0].rank().map(|r| r.max(1));
        let count = match inputs[0].shape.to_static() {
            Some(s) => {
                Dim::interval(0, Some(s.iter().product::<usize>() as u64)).unwrap_or(Dim::DYNAMIC)
            }
            None => Dim::DYNAMIC,
        };
        let shape = match rank {
            Some(r) => PartialShape::new(vec![Dim::fixed(r as u64), count]),
            None => PartialShape::new(vec![Dim::DYNAMIC, count]),
        };
        Ok(vec![Fact::new(self.output_type, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let ty = x.element_type();
        let hits: Vec<usize> = with_any_scalar!(ty, T => {
            let v = x.values::<T>().ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
            v.iter().enumerate().filter(|(_, &e)| e != T::default()).map(|(i, _)| i).collect()
        }, else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("NonZero-3 on {ty}"))));
        let shape = x.shape();
        let rank = shape.len().max(1);
        let n = hits.len();
        let t = if self.output_type == ElementType::I32 {
            Tensor::from_i32(vec![rank, n], coordinate_rows(shape, &hits, |c| c as i32))
        } else {
            Tensor::from_i64(vec![rank, n], coordinate_rows(shape, &hits, |c| c as i64))
        }
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }
}

/// The `[rank, hits]` coordinates of flat positions `hits` in `shape`, one row per axis. A
/// position's coordinates come from dividing by the row-major strides in place: no vector per
/// position (one per hit cost 34 ns each, the whole of a 25,600-element NonZero).
fn coordinate_rows<I: Copy + Default>(
    shape: &[usize],
    hits: &[usize],
    to: impl Fn(usize) -> I,
) -> Vec<I> {
    let n = hits.len();
    if shape.len() <= 1 {
        // Rank 0 is one row of zeros; rank 1's coordinates are the positions themselves.
        return hits
            .iter()
            .map(|&p| {
                if shape.is_empty() {
                    I::default()
                } else {
                    to(p)
                }
            })
            .collect();
    }
    let mut out = vec![I::default(); shape.len() * n];
    let strides = irun_opkit::strided::row_major_strides(shape);
    for (j, &p) in hits.iter().enumerate() {
        let mut rest = p;
        for (k, &stride) in strides.iter().enumerate() {
            // Positively strided: every dim of a shape with a hit is at least 1.
            let stride = stride as usize;
            out[k * n + j] = to(rest / stride);
            rest %= stride;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn coordinates_column_by_column() {
        let op = NonZero {
            output_type: ElementType::I64,
        };
        let out = run(&op, vec![f32s(&[2, 2], &[0., f32::NAN, -0., 3.])]).unwrap();
        assert_eq!(out[0], i64s(&[2, 2], &[0, 1, 1, 1]));
        assert_eq!(
            run(&op, vec![f32s(&[], &[2.])]).unwrap()[0],
            i64s(&[1, 1], &[0])
        );
        assert_eq!(
            run(&op, vec![f32s(&[], &[0.])]).unwrap()[0].shape(),
            &[1, 0]
        );
    }

    #[test]
    fn coordinates_of_rank_three_in_both_types() {
        let shape = [2usize, 3, 4];
        let data: Vec<f32> = (0..24)
            .map(|i| if i % 5 == 2 { 1.0 } else { 0.0 })
            .collect();
        let hits: Vec<usize> = (0..24).filter(|i| i % 5 == 2).collect();
        let mut want = Vec::new();
        for axis in 0..3 {
            for &p in &hits {
                want.push([p / 12, p / 4 % 3, p % 4][axis] as i64);
            }
        }
        let op64 = NonZero {
            output_type: ElementType::I64,
        };
        let out = run(&op64, vec![f32s(&shape, &data)]).unwrap();
        assert_eq!(out[0], i64s(&[3, hits.len()], &want));
        let op32 = NonZero {
            output_type: ElementType::I32,
        };
        let out = run(&op32, vec![f32s(&shape, &data)]).unwrap();
        let want32: Vec<i32> = want.iter().map(|&v| v as i32).collect();
        assert_eq!(out[0], i32s(&[3, hits.len()], &want32));
    }
}
