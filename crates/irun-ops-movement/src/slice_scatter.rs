//! SliceScatter-15: a copy of `data` whose Slice-8 region (`start`, `stop`, `step`,
//! optional `axes`: inputs 2 to 5, with Slice-8's clamping and negative rules) is replaced
//! by `updates`, which must have the region's shape.

use irun_tensor::{with_words, PartialShape, Word, WordVec, Words};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::slice::{plan, slice_dim};
use crate::strided::row_major_strides;
use crate::util::{expect_int_type, ints, known_ints, no_strings, output};

#[derive(Debug)]
pub struct SliceScatter;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(SliceScatter))
}

/// Per data dim: first index, step and count of the region.
fn region(dims: &[usize], values: &[Vec<i64>]) -> Result<Vec<(i64, i64, usize)>, OpError> {
    let per_axis = plan(
        dims.len(),
        &values[0],
        &values[1],
        &values[2],
        values.get(3).map(Vec::as_slice),
    )?;
    Ok(dims
        .iter()
        .zip(&per_axis)
        .map(|(&d, p)| match p {
            None => (0, 1, d),
            Some((s, e, st)) => {
                let (first, n) = slice_dim(*s, *e, *st, d as u64);
                (first, *st, n as usize)
            }
        })
        .collect())
}

impl Op for SliceScatter {
    fn name(&self) -> &'static str {
        "SliceScatter-15"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[2, 3, 4, 5]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 5, 6, self.name())?;
        for slot in 2..inputs.len() {
            expect_int_type(inputs, slot, self.name())?;
        }
        let (data, updates) = (&inputs[0], &inputs[1]);
        crate::op::same_element_type(inputs, &[0, 1], self.name())?;
        let values: Option<Vec<Vec<i64>>> = inputs[2..].iter().map(known_ints).collect();
        if let (Some(d), Some(u), Some(v)) =
            (data.shape.to_static(), updates.shape.to_static(), values)
        {
            let want: Vec<usize> = region(&d, &v)?.iter().map(|r| r.2).collect();
            if want != u {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!(
                        "{}: updates {u:?} for a slice of shape {want:?}",
                        self.name()
                    ),
                ));
            }
        }
        let shape = data.shape.clone();
        Ok(vec![Fact::new(
            data.ty,
            if shape.rank().is_some() {
                shape
            } else {
                PartialShape::dynamic_rank()
            },
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.len() < 5 {
            return Err(OpError::new(
                codes::ARITY,
                "SliceScatter-15 takes 5 or 6 inputs",
            ));
        }
        let values: Vec<Vec<i64>> = inputs[2..]
            .iter()
            .enumerate()
            .map(|(i, t)| ints(t, i + 2))
            .collect::<Result<_, _>>()?;
        let (data, updates) = (&inputs[0], &inputs[1]);
        let dims = data.shape();
        let reg = region(dims, &values)?;
        let counts: Vec<usize> = reg.iter().map(|r| r.2).collect();
        if counts != updates.shape() || data.element_type() != updates.element_type() {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!(
                    "{}: updates {:?} for a slice of shape {counts:?}",
                    self.name(),
                    updates.shape()
                ),
            ));
        }
        let strides = row_major_strides(dims);
        let (dw, uw) = (
            data.words().ok_or_else(|| no_strings(self.name()))?,
            updates.words().ok_or_else(|| no_strings(self.name()))?,
        );
        let out = with_words!(dw, w => scatter(w, uw, &reg, &strides)?);
        Ok(vec![output(data.element_type(), dims.to_vec(), out)?])
    }
}

/// `data` with the region `reg` (first, step, count per dim) overwritten by `updates`.
fn scatter<W: Word>(
    data: &[W],
    updates: Words<'_>,
    reg: &[(i64, i64, usize)],
    strides: &[isize],
) -> Result<WordVec, OpError> {
    let u =
        W::of(updates).ok_or_else(|| OpError::new(codes::INTERNAL, "updates of another width"))?;
    let mut out = data.to_vec();
    let mut coord = vec![0usize; reg.len()];
    for &v in u {
        let at: isize = reg
            .iter()
            .zip(&coord)
            .zip(strides)
            .map(|((r, &c), &s)| (r.0 as isize + c as isize * r.1 as isize) * s)
            .sum();
        out[at as usize] = v;
        for d in (0..coord.len()).rev() {
            coord[d] += 1;
            if coord[d] < reg[d].2 {
                break;
            }
            coord[d] = 0;
        }
    }
    Ok(W::into_word_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn writes_the_slice() {
        let data = i32s(&[2, 4], &[0; 8]);
        let out = run(
            &SliceScatter,
            vec![
                data.clone(),
                i32s(&[2, 2], &[1, 2, 3, 4]),
                i64s(&[1], &[-1]),
                i64s(&[1], &[i64::MIN]),
                i64s(&[1], &[-2]),
                i64s(&[1], &[1]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[2, 4], &[0, 2, 0, 1, 0, 4, 0, 3]));
        let e = run(
            &SliceScatter,
            vec![
                data,
                i32s(&[2, 3], &[0; 6]),
                i64s(&[1], &[0]),
                i64s(&[1], &[2]),
                i64s(&[1], &[1]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::RUN_SHAPE);
    }
}
