//! Eye-9: `batch_shape + [rows, cols]` of `output_type` (required), ones on diagonal
//! `diagonal_index` (`(i, i + d)`, negative d below the main diagonal) and zeros elsewhere.
//! Inputs `num_rows`, `num_columns`, `diagonal_index` (i32/i64 scalars or one-element 1-D)
//! and optional `batch_shape` (1-D). A diagonal outside the matrix gives all zeros.

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints};

#[derive(Debug)]
pub struct Eye {
    pub output_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Eye {
        output_type: a.element_type("output_type")?,
    }))
}

/// The one value of count input `slot`.
fn count(v: &[i64], slot: usize) -> Result<i64, OpError> {
    match v {
        [x] => Ok(*x),
        _ => Err(OpError::input(
            slot,
            codes::SHAPE,
            format!("Eye-9: input {slot} must hold one value, got {}", v.len()),
        )),
    }
}

fn size(v: &[i64], slot: usize) -> Result<u64, OpError> {
    let x = count(v, slot)?;
    u64::try_from(x).map_err(|_| {
        OpError::input(
            slot,
            codes::BAD_VALUE,
            format!("Eye-9: input {slot} is {x}; it must be >= 0"),
        )
    })
}

impl Op for Eye {
    fn name(&self) -> &'static str {
        "Eye-9"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[0, 1, 3]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 3, 4, self.name())?;
        for slot in 0..inputs.len() {
            expect_int_type(inputs, slot, self.name())?;
        }
        let dim = |slot: usize| -> Result<Dim, OpError> {
            Ok(match known_ints(&inputs[slot]) {
                Some(v) => Dim::fixed(size(&v, slot)?),
                None => Dim::DYNAMIC,
            })
        };
        let (r, c) = (dim(0)?, dim(1)?);
        let shape = match inputs.get(3) {
            None => PartialShape::new(vec![r, c]),
            Some(b) => match known_ints(b) {
                Some(v) => {
                    let mut d: Vec<Dim> = v
                        .iter()
                        .map(|&x| u64::try_from(x).map(Dim::fixed))
                        .collect::<Result<_, _>>()
                        .map_err(|_| {
                            OpError::input(
                                3,
                                codes::BAD_VALUE,
                                format!("Eye-9: batch_shape {v:?} holds a negative dim"),
                            )
                        })?;
                    d.extend([r, c]);
                    PartialShape::new(d)
                }
                None => match b.shape.to_static() {
                    Some(s) if s.len() == 1 => PartialShape::dynamic_of_rank(s[0] + 2),
                    _ => PartialShape::dynamic_rank(),
                },
            },
        };
        Ok(vec![Fact::new(self.output_type, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let rows = size(&ints(&inputs[0], 0)?, 0)? as usize;
        let cols = size(&ints(&inputs[1], 1)?, 1)? as usize;
        let d = count(&ints(&inputs[2], 2)?, 2)?;
        let mut shape: Vec<usize> = match inputs.get(3) {
            Some(b) => ints(b, 3)?
                .iter()
                .map(|&x| usize::try_from(x))
                .collect::<Result<_, _>>()
                .map_err(|_| OpError::input(3, codes::BAD_VALUE, "Eye-9: a negative batch dim"))?,
            None => Vec::new(),
        };
        let batches: usize = shape.iter().product();
        shape.extend([rows, cols]);
        let ty = self.output_type;
        let ones: Vec<usize> = (0..rows)
            .filter_map(|i| {
                let j = i as i64 + d;
                (0..cols as i64).contains(&j).then(|| i * cols + j as usize)
            })
            .collect();
        let plane = rows * cols;
        let t = if ty == ElementType::Boolean {
            Tensor::from_bool(shape, diagonal(false, true, batches, plane, &ones))
        } else {
            with_number!(ty, T => Tensor::new(ty, shape, T::wrap(diagonal(T::default(), T::from_f64(1.0), batches, plane, &ones))),
                else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("Eye-9 to {ty}"))))
        };
        Ok(vec![Arc::new(t.map_err(|e| {
            OpError::new(codes::RUN_SHAPE, e.to_string())
        })?)])
    }
}

/// `batches` planes of `plane` zeros with `one` at the offsets `ones`.
fn diagonal<T: Copy>(zero: T, one: T, batches: usize, plane: usize, ones: &[usize]) -> Vec<T> {
    let mut v = vec![zero; batches * plane];
    for b in 0..batches {
        for &k in ones {
            v[b * plane + k] = one;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;

    #[test]
    fn diagonals_and_batches() {
        let op = Eye {
            output_type: ElementType::F32,
        };
        let y = eval1(
            &op,
            vec![i64s(&[], &[3]), i64s(&[], &[3]), i64s(&[], &[-2])],
        )
        .unwrap();
        assert_eq!(y, f32s(&[3, 3], &[0., 0., 0., 0., 0., 0., 1., 0., 0.]));
        let y = eval1(&op, vec![i64s(&[], &[3]), i64s(&[], &[3]), i64s(&[], &[3])]).unwrap();
        assert_eq!(y, f32s(&[3, 3], &[0.; 9]));
        let op = Eye {
            output_type: ElementType::I32,
        };
        let y = eval1(
            &op,
            vec![
                i32s(&[1], &[2]),
                i32s(&[1], &[3]),
                i32s(&[1], &[1]),
                i64s(&[1], &[2]),
            ],
        )
        .unwrap();
        assert_eq!(y, i32s(&[2, 2, 3], &[0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1]));
        let f = op
            .infer(&[
                i64_value(&[2]),
                fact(I64, ""),
                fact(I64, ""),
                i64_value(&[4]),
            ])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[4,2,?]");
    }
}
