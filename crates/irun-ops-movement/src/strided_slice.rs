//! StridedSlice-1: TensorFlow's strided slice. Inputs data, `begin`, `end` and optional
//! `stride` (1-D integers of one length n, stride default 1, never 0). Each of the n slicing
//! positions addresses input dims by five 0/1 mask attributes (missing entries are 0, extra
//! ones ignored), where a 1 means:
//! - `begin_mask` / `end_mask`: ignore the value; slice from the start / to the end (the
//!   last element / past the first for a negative stride);
//! - `new_axis_mask`: insert a dim of 1 here, consuming no input dim;
//! - `shrink_axis_mask`: take the element at `begin` (negative counts from the end) and drop
//!   the dim;
//! - `ellipsis_mask` (one position at most): every input dim the other positions leave.
//!
//! Input dims past the positions are taken whole. Otherwise a position clamps like Slice-8
//! (numpy): `begin == end` is an empty dim. One strided copy.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::slice::slice_dim;
use crate::strided::{row_major_strides, Strided};
use crate::util::{expect_int_type, ints, known_ints, output};

#[derive(Debug, Default)]
pub struct StridedSlice {
    pub begin_mask: Vec<i64>,
    pub end_mask: Vec<i64>,
    pub new_axis_mask: Vec<i64>,
    pub shrink_axis_mask: Vec<i64>,
    pub ellipsis_mask: Vec<i64>,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let mask = |name| a.i64_list_or(name, Some(Vec::new()));
    Ok(Box::new(StridedSlice {
        begin_mask: mask("begin_mask")?,
        end_mask: mask("end_mask")?,
        new_axis_mask: mask("new_axis_mask")?,
        shrink_axis_mask: mask("shrink_axis_mask")?,
        ellipsis_mask: mask("ellipsis_mask")?,
    }))
}

/// What one output dim (or a dropped input dim) is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Item {
    /// Input dim `axis`, whole.
    Whole(usize),
    /// A new dim of 1.
    New,
    /// Input dim `axis` at index `begin` (not normalised), dropped.
    Shrink(usize, i64),
    /// Input dim `axis` sliced `start:stop:step` (i64::MIN / MAX: open ends).
    Slice(usize, i64, i64, i64),
}

fn bit(mask: &[i64], i: usize) -> bool {
    mask.get(i).is_some_and(|&v| v != 0)
}

impl StridedSlice {
    fn plan(
        &self,
        rank: usize,
        begin: &[i64],
        end: &[i64],
        stride: &[i64],
    ) -> Result<Vec<Item>, OpError> {
        let bad = |slot: usize, m: String| {
            OpError::input(slot, codes::BAD_VALUE, format!("StridedSlice-1: {m}"))
        };
        let n = begin.len();
        if end.len() != n || stride.len() != n {
            return Err(bad(
                2,
                format!(
                    "begin, end and stride have lengths {n}, {}, {}",
                    end.len(),
                    stride.len()
                ),
            ));
        }
        if let Some(p) = stride.iter().position(|&s| s == 0) {
            return Err(bad(3, format!("stride {p} is 0")));
        }
        let ellipses: Vec<usize> = (0..n).filter(|&i| bit(&self.ellipsis_mask, i)).collect();
        if ellipses.len() > 1 {
            return Err(OpError::attribute(
                "ellipsis_mask",
                format!(
                    "StridedSlice-1: ellipsis_mask sets {} positions; one at most",
                    ellipses.len()
                ),
            ));
        }
        let new_axis = |i| bit(&self.new_axis_mask, i);
        let consuming = (0..n)
            .filter(|&i| !ellipses.contains(&i) && !new_axis(i))
            .count();
        if consuming > rank {
            return Err(bad(
                1,
                format!("{consuming} positions slice input dims, but the data has rank {rank}"),
            ));
        }
        let mut items = Vec::with_capacity(rank + n);
        let mut axis = 0;
        for i in 0..n {
            if ellipses.contains(&i) {
                let covered = rank - consuming;
                items.extend((axis..axis + covered).map(Item::Whole));
                axis += covered;
            } else if new_axis(i) {
                items.push(Item::New);
            } else if bit(&self.shrink_axis_mask, i) {
                items.push(Item::Shrink(axis, begin[i]));
                axis += 1;
            } else {
                let step = stride[i];
                let start = if bit(&self.begin_mask, i) {
                    if step > 0 {
                        0
                    } else {
                        i64::MAX
                    }
                } else {
                    begin[i]
                };
                let stop = if bit(&self.end_mask, i) {
                    if step > 0 {
                        i64::MAX
                    } else {
                        i64::MIN
                    }
                } else {
                    end[i]
                };
                items.push(Item::Slice(axis, start, stop, step));
                axis += 1;
            }
        }
        items.extend((axis..rank).map(Item::Whole));
        Ok(items)
    }
}

/// The index `begin` names in a dim of `d`, or an error when it is outside.
fn shrink_index(begin: i64, d: u64, axis: usize) -> Result<u64, OpError> {
    let i = if begin < 0 {
        begin as i128 + d as i128
    } else {
        begin as i128
    };
    if i < 0 || i >= d as i128 {
        return Err(OpError::input(
            1,
            codes::INDEX_OUT_OF_RANGE,
            format!("StridedSlice-1: shrinking dim {axis} of size {d} at index {begin}"),
        ));
    }
    Ok(i as u64)
}

impl Op for StridedSlice {
    fn name(&self) -> &'static str {
        "StridedSlice-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2, 3]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 3, 4, self.name())?;
        for slot in 1..inputs.len() {
            expect_int_type(inputs, slot, self.name())?;
        }
        let data = &inputs[0];
        let Some(dims) = data.shape.dims() else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank())]);
        };
        let begin = known_ints(&inputs[1]);
        let end = known_ints(&inputs[2]);
        let stride = match inputs.get(3) {
            Some(f) => known_ints(f),
            None => begin.as_ref().map(|b| vec![1; b.len()]),
        };
        let (Some(begin), Some(end), Some(stride)) = (begin, end, stride) else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank())]);
        };
        let mut out = Vec::new();
        for item in self.plan(dims.len(), &begin, &end, &stride)? {
            match item {
                Item::Whole(a) => out.push(dims[a]),
                Item::New => out.push(Dim::fixed(1)),
                Item::Shrink(a, b) => {
                    if let Some(d) = dims[a].get_static() {
                        shrink_index(b, d, a)?;
                    }
                }
                Item::Slice(a, s, e, st) => out.push(match dims[a].get_static() {
                    Some(d) => Dim::fixed(slice_dim(s, e, st, d).1),
                    None => Dim::interval(0, dims[a].max()).unwrap_or(Dim::DYNAMIC),
                }),
            }
        }
        Ok(vec![Fact::new(data.ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.len() < 3 {
            return Err(OpError::new(
                codes::ARITY,
                "StridedSlice-1 takes 3 or 4 inputs",
            ));
        }
        let begin = ints(&inputs[1], 1)?;
        let end = ints(&inputs[2], 2)?;
        let stride = match inputs.get(3) {
            Some(t) => ints(t, 3)?,
            None => vec![1; begin.len()],
        };
        let data = &inputs[0];
        let dims = data.shape();
        let strides = row_major_strides(dims);
        let mut layout = Strided {
            out_shape: Vec::new(),
            base: 0,
            strides: Vec::new(),
        };
        let mut empty = false;
        for item in self.plan(dims.len(), &begin, &end, &stride)? {
            let (n, stride) = match item {
                Item::Whole(a) => (dims[a], strides[a]),
                Item::New => (1, 0),
                Item::Shrink(a, b) => {
                    let i = shrink_index(b, dims[a] as u64, a)?;
                    layout.base += i as isize * strides[a];
                    continue;
                }
                Item::Slice(a, s, e, st) => {
                    let (first, n) = slice_dim(s, e, st, dims[a] as u64);
                    if n > 0 {
                        layout.base += first as isize * strides[a];
                    }
                    (n as usize, strides[a] * st as isize)
                }
            };
            empty |= n == 0;
            layout.out_shape.push(n);
            layout.strides.push(stride);
        }
        if empty {
            layout.base = 0;
        }
        let words = layout.apply(data, self.name())?;
        Ok(vec![output(data.element_type(), layout.out_shape, words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn masks(
        begin: &[i64],
        end: &[i64],
        new: &[i64],
        shrink: &[i64],
        ellipsis: &[i64],
    ) -> StridedSlice {
        StridedSlice {
            begin_mask: begin.to_vec(),
            end_mask: end.to_vec(),
            new_axis_mask: new.to_vec(),
            shrink_axis_mask: shrink.to_vec(),
            ellipsis_mask: ellipsis.to_vec(),
        }
    }

    fn x() -> Tensor {
        i32s(&[2, 3, 4], &(0..24).collect::<Vec<_>>())
    }

    fn slice(op: &StridedSlice, b: &[i64], e: &[i64], s: &[i64]) -> Tensor {
        let n = b.len();
        run(op, vec![x(), i64s(&[n], b), i64s(&[n], e), i64s(&[n], s)])
            .unwrap()
            .remove(0)
    }

    /// numpy: x[1, 0:3:2, ::-1] and friends.
    #[test]
    fn numpy_slices() {
        let plain = masks(&[], &[], &[], &[], &[]);
        // x[0:1, 0:3:2, 3:0:-1]
        let out = slice(&plain, &[0, 0, 3], &[1, 3, 0], &[1, 2, -1]);
        assert_eq!(out, i32s(&[1, 2, 3], &[3, 2, 1, 11, 10, 9]));
        // x[1, :, ::-1]: shrink 0, end-mask the rest.
        let op = masks(&[0, 1, 1], &[0, 1, 1], &[], &[1], &[]);
        let out = slice(&op, &[1, 0, 0], &[0, 0, 0], &[1, 1, -1]);
        assert_eq!(
            out,
            i32s(&[3, 4], &[15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20])
        );
        // x[..., None, -1]: the ellipsis covers dims 0 and 1.
        let op = masks(&[], &[], &[0, 1, 0], &[0, 0, 1], &[1]);
        let out = slice(&op, &[0, 0, -1], &[0, 0, 0], &[1, 1, 1]);
        assert_eq!(out, i32s(&[2, 3, 1], &[3, 7, 11, 15, 19, 23]));
        // x[None, 1:] (positions past `begin` take whole dims); begin == end is empty.
        let op = masks(&[], &[0, 1], &[1], &[], &[]);
        let out = slice(&op, &[0, 1], &[0, 0], &[1, 1]);
        assert_eq!(out.shape(), &[1, 1, 3, 4]);
        let out = slice(&plain, &[1], &[1], &[1]);
        assert_eq!(out.shape(), &[0, 3, 4]);
    }

    /// The spec prose's clamping example: on a 2x2 input, `[1234:1234, 2:4321:-1]` is
    /// empty in both dims (OpenVINO's reference and CPU agree, the prose says (1, 1)).
    #[test]
    fn clamping_example_is_empty() {
        let op = masks(&[], &[], &[], &[], &[]);
        let out = run(
            &op,
            vec![
                f32s(&[2, 2], &[1., 2., 3., 4.]),
                i64s(&[2], &[1234, 2]),
                i64s(&[2], &[1234, 4321]),
                i64s(&[2], &[1, -1]),
            ],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[0, 0]);
    }

    #[test]
    fn shapes_and_errors() {
        let op = masks(&[0, 1], &[0, 1], &[], &[1], &[]);
        let f = op
            .infer(&[
                fact(F32, "2,?,4"),
                i64_value(&[1, 0]),
                i64_value(&[2, 0]),
                i64_value(&[1, 2]),
            ])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[?,4]");
        let e = op
            .infer(&[
                fact(F32, "2,?,4"),
                i64_value(&[2, 0]),
                i64_value(&[2, 0]),
                i64_value(&[1, 2]),
            ])
            .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
        let e = op
            .infer(&[
                fact(F32, "2,3"),
                i64_value(&[0, 0]),
                i64_value(&[1, 1]),
                i64_value(&[1, 0]),
            ])
            .unwrap_err();
        assert!(e.message.contains("stride 1 is 0"), "{}", e.message);
        let two = masks(&[], &[], &[], &[], &[1, 1]);
        let e = two
            .infer(&[fact(F32, "2,3"), i64_value(&[0, 0]), i64_value(&[1, 1])])
            .unwrap_err();
        assert!(e.message.contains("one at most"), "{}", e.message);
        let e = masks(&[], &[], &[], &[], &[])
            .infer(&[fact(F32, "2"), i64_value(&[0, 0]), i64_value(&[1, 1])])
            .unwrap_err();
        assert!(e.message.contains("rank 1"), "{}", e.message);
    }
}
