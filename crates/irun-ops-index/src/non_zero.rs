//! NonZero-3: the coordinates of the non-zero elements, `[rank, count]`, column j the j-th
//! non-zero in row-major order, in `output_type` (i64 default, or i32). Non-zero is `x != 0`:
//! NaN counts, -0.0 does not. A scalar is rank 1 here: non-zero gives `[[0]]` (1,1), zero
//! gives (1,0) (OpenVINO CPU; the reference gives (0,0)).

use std::sync::Arc;

use irun_tensor::{with_any_scalar, Dim, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::coordinates;
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
        let mut out = vec![0i64; rank * n];
        if !shape.is_empty() {
            for (j, &p) in hits.iter().enumerate() {
                for (k, c) in coordinates(shape, p).into_iter().enumerate() {
                    out[k * n + j] = c as i64;
                }
            }
        }
        let t = if self.output_type == ElementType::I32 {
            Tensor::from_i32(vec![rank, n], out.iter().map(|&v| v as i32).collect())
        } else {
            Tensor::from_i64(vec![rank, n], out)
        }
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }
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
}
