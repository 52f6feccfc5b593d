//! Slice-8: Python slicing per axis. Inputs data (rank >= 1), start, stop, step (1-D integers
//! of one length) and optional axes (unique, negative allowed; default `0..len`); other axes
//! are copied whole. A negative start or stop counts from the end; with a positive step both
//! clamp to `[0, d]`, with a negative one to `[-1, d-1]` (-1 meaning before the first element);
//! i64::MIN and i64::MAX are open ends; a step of 0 is invalid. A copy through the strided
//! kernel (a negative step reads backwards).

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::strided::{row_major_strides, Strided};
use crate::util::{expect_int_type, ints, known_ints, norm_axis, output};

#[derive(Debug)]
pub struct Slice;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Slice))
}

/// First index and count of `start:stop:step` over a dim of size `d`.
pub fn slice_dim(start: i64, stop: i64, step: i64, d: u64) -> (i64, u64) {
    let d = d as i128;
    let norm = |v: i64| if v < 0 { v as i128 + d } else { v as i128 };
    let (s, e, step) = (norm(start), norm(stop), step as i128);
    let (s, e, n) = if step > 0 {
        let (s, e) = (s.clamp(0, d), e.clamp(0, d));
        (s, e, (e - s + step - 1).div_euclid(step))
    } else {
        let (s, e) = (s.clamp(-1, d - 1), e.clamp(-1, d - 1));
        (s, e, (s - e + (-step) - 1).div_euclid(-step))
    };
    let _ = e;
    (s as i64, n.max(0) as u64)
}

/// `start:stop:step` of one axis.
type Range3 = (i64, i64, i64);

/// Per data axis: `start:stop:step` of the listed axes; `None` for axes copied whole.
pub(crate) fn plan(
    rank: usize,
    start: &[i64],
    stop: &[i64],
    step: &[i64],
    axes: Option<&[i64]>,
) -> Result<Vec<Option<Range3>>, OpError> {
    let bad =
        |slot: usize, m: String| OpError::input(slot, codes::BAD_VALUE, format!("Slice-8: {m}"));
    if start.len() != stop.len() || start.len() != step.len() {
        return Err(bad(
            2,
            format!(
                "start, stop and step have lengths {}, {}, {}",
                start.len(),
                stop.len(),
                step.len()
            ),
        ));
    }
    if let Some(p) = step.iter().position(|&s| s == 0) {
        return Err(bad(3, format!("step {p} is 0")));
    }
    let axes: Vec<usize> = match axes {
        Some(a) if a.len() != start.len() => {
            return Err(bad(
                4,
                format!("{} axes for {} starts", a.len(), start.len()),
            ))
        }
        Some(a) => a
            .iter()
            .map(|&x| norm_axis(x, rank, Some(4), "Slice-8"))
            .collect::<Result<_, _>>()?,
        None if start.len() > rank => {
            return Err(bad(1, format!("{} starts for rank {rank}", start.len())))
        }
        None => (0..start.len()).collect(),
    };
    let mut per_axis = vec![None; rank];
    for (i, &a) in axes.iter().enumerate() {
        if per_axis[a].is_some() {
            return Err(bad(4, format!("axis {a} is listed twice")));
        }
        per_axis[a] = Some((start[i], stop[i], step[i]));
    }
    Ok(per_axis)
}

impl Op for Slice {
    fn name(&self) -> &'static str {
        "Slice-8"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2, 3, 4]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 4, 5, "Slice-8")?;
        for slot in 1..inputs.len() {
            expect_int_type(inputs, slot, self.name())?;
        }
        let data = &inputs[0];
        let Some(dims) = data.shape.dims() else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank())]);
        };
        if dims.is_empty() {
            return Err(OpError::input(
                0,
                codes::RANK,
                "Slice-8: data must have rank 1 or more",
            ));
        }
        let values: Vec<Option<Vec<i64>>> = inputs[1..].iter().map(known_ints).collect();
        let (Some(start), Some(stop), Some(step)) = (&values[0], &values[1], &values[2]) else {
            return Ok(vec![Fact::new(
                data.ty,
                PartialShape::dynamic_of_rank(dims.len()),
            )]);
        };
        let axes = match values.get(3) {
            Some(None) => {
                return Ok(vec![Fact::new(
                    data.ty,
                    PartialShape::dynamic_of_rank(dims.len()),
                )])
            }
            Some(Some(a)) => Some(a.as_slice()),
            None => None,
        };
        let per_axis = plan(dims.len(), start, stop, step, axes)?;
        let out = dims
            .iter()
            .zip(&per_axis)
            .map(|(&d, p)| match (p, d.get_static()) {
                (None, _) => d,
                (Some((s, e, st)), Some(n)) => Dim::fixed(slice_dim(*s, *e, *st, n).1),
                (Some(_), None) => Dim::interval(0, d.max()).unwrap_or(Dim::DYNAMIC),
            })
            .collect();
        Ok(vec![Fact::new(data.ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let values: Vec<Vec<i64>> = inputs[1..]
            .iter()
            .enumerate()
            .map(|(i, t)| ints(t, i + 1))
            .collect::<Result<_, _>>()?;
        let data = &inputs[0];
        if values.len() < 3 {
            return Err(OpError::new(codes::ARITY, "Slice-8 takes 4 or 5 inputs"));
        }
        let per_axis = plan(
            data.shape().len(),
            &values[0],
            &values[1],
            &values[2],
            values.get(3).map(Vec::as_slice),
        )?;
        let strides = row_major_strides(data.shape());
        let mut layout = Strided {
            out_shape: Vec::new(),
            base: 0,
            strides: Vec::new(),
        };
        for ((&d, p), &st) in data.shape().iter().zip(&per_axis).zip(&strides) {
            let (first, step, n) = match p {
                None => (0, 1, d as u64),
                Some((s, e, step)) => {
                    let (first, n) = slice_dim(*s, *e, *step, d as u64);
                    (first, *step, n)
                }
            };
            if n > 0 {
                layout.base += first as isize * st;
            }
            layout.out_shape.push(n as usize);
            layout.strides.push(st * step as isize);
        }
        if layout.base == 0 && layout.out_shape == data.shape() && layout.strides == strides {
            // Every element in order (torch's `x[:, :d]` on a dim of d, as in scatter_add_):
            // the input itself, shared.
            return Ok(vec![inputs[0].clone()]);
        }
        let words = layout.apply(data, self.name())?;
        Ok(vec![output(data.element_type(), layout.out_shape, words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use std::sync::Arc;

    #[test]
    fn python_slicing_with_negative_steps() {
        assert_eq!(slice_dim(9, -11, -1, 10), (9, 10), "full reversal");
        assert_eq!(slice_dim(100, -100, -1, 10), (9, 10));
        assert_eq!(slice_dim(-1, i64::MIN, -2, 10), (9, 5), "9,7,5,3,1");
        assert_eq!(slice_dim(1, i64::MAX, 3, 10), (1, 3), "1,4,7");
        assert_eq!(slice_dim(5, 2, 1, 10), (5, 0));
        assert_eq!(slice_dim(-3, -1, 1, 10), (7, 2));
    }

    #[test]
    fn a_slice_of_everything_shares_the_input() {
        let x = Arc::new(f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]));
        let all = |stop: i64, step: i64| {
            Slice
                .eval(vec![
                    x.clone(),
                    Arc::new(i64s(&[2], &[0, 0])),
                    Arc::new(i64s(&[2], &[i64::MAX, stop])),
                    Arc::new(i64s(&[2], &[1, step])),
                ])
                .unwrap()
        };
        let out = all(3, 1);
        assert_eq!(*out[0], *x);
        assert!(out[0].shares_storage_with(&x));
        // Not everything (one column less), or not in order (reversed): a copy.
        let out = all(2, 1);
        assert_eq!(*out[0], f32s(&[2, 2], &[1., 2., 4., 5.]));
        assert!(!out[0].shares_storage_with(&x));
        let reversed = Slice
            .eval(vec![
                x.clone(),
                Arc::new(i64s(&[1], &[-1])),
                Arc::new(i64s(&[1], &[i64::MIN])),
                Arc::new(i64s(&[1], &[-1])),
                Arc::new(i64s(&[1], &[1])),
            ])
            .unwrap();
        assert_eq!(*reversed[0], f32s(&[2, 3], &[3., 2., 1., 6., 5., 4.]));
    }

    #[test]
    fn slices_with_axes_and_reverses() {
        let x: Vec<i32> = (0..12).collect();
        let out = run(
            &Slice,
            vec![
                i32s(&[3, 4], &x),
                i64s(&[1], &[-1]),
                i64s(&[1], &[i64::MIN]),
                i64s(&[1], &[-2]),
                i64s(&[1], &[1]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[3, 2], &[3, 1, 7, 5, 11, 9]));
        let out = run(
            &Slice,
            vec![
                i32s(&[3, 4], &x),
                i64s(&[1], &[1]),
                i64s(&[1], &[3]),
                i64s(&[1], &[1]),
            ],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[2, 4]);
        let f = infer1(
            &Slice,
            &[
                fact(F32, "10,?"),
                i64_value(&[2, 0]),
                i64_value(&[8, 5]),
                i64_value(&[3, 1]),
            ],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,?]");
    }

    #[test]
    fn invalid_steps_and_axes() {
        let e = infer1(
            &Slice,
            &[
                fact(F32, "4"),
                i64_value(&[0]),
                i64_value(&[2]),
                i64_value(&[0]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
        let e = infer1(
            &Slice,
            &[
                fact(F32, "4,4"),
                i64_value(&[0, 0]),
                i64_value(&[2, 2]),
                i64_value(&[1, 1]),
                i64_value(&[1, -1]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
    }
}
