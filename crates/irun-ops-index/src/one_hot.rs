//! OneHot-1: `out = (indices == k) ? on_value : off_value` with a new axis of size `depth` at
//! `axis` (required; counted in the output rank, -1 is a new last axis). `indices` i32/i64,
//! `depth` a rank-0 integer, `on_value`/`off_value` rank-0 of the output type. An index that
//! is negative or at least `depth` gives an all-off row (reference and CPU).
//!
//! OneHot-16 adds `negative_indices_mode`: `ignore_negative` (omitted; as OneHot-1) or
//! `normalize`, where an index in `[-depth, -1]` counts from the end (`i + depth`, as ONNX's
//! OneHot, which OpenVINO's ONNX frontend converts to this mode).

use irun_tensor::{with_words, Dim, PartialShape, Word, WordVec, Words};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{try_zeroed, IndexValues};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::{ints, known_ints, no_strings, norm_axis, output};

#[derive(Debug)]
pub struct OneHot {
    pub axis: i64,
    pub version: u32,
    /// Negative indices count from the end (OneHot-16's `normalize`).
    pub normalize: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", None)?;
    Ok(Box::new(OneHot {
        axis,
        version: 1,
        normalize: false,
    }))
}

pub fn build_v16(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", None)?;
    let mode = a.enum_or(
        "negative_indices_mode",
        &["ignore_negative", "normalize"],
        "ignore_negative",
    )?;
    Ok(Box::new(OneHot {
        axis,
        version: 16,
        normalize: mode == "normalize",
    }))
}

impl Op for OneHot {
    fn name(&self) -> &'static str {
        if self.version == 16 {
            "OneHot-16"
        } else {
            "OneHot-1"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 4, self.name())?;
        for (slot, f) in inputs.iter().enumerate().skip(1) {
            if let Some(r) = f.rank().filter(|&r| r != 0) {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("OneHot-1: input {slot} must be a scalar (rank 0), got rank {r}"),
                ));
            }
        }
        let ty = crate::op::same_element_type(inputs, &[2, 3], self.name())?;
        let depth = known_ints(&inputs[1]).and_then(|v| v.first().copied());
        if let Some(d) = depth.filter(|&d| d < 0) {
            return Err(OpError::input(
                1,
                codes::BAD_VALUE,
                format!("OneHot-1: depth {d} is negative"),
            ));
        }
        let shape = match inputs[0].shape.dims() {
            Some(d) => {
                let axis = norm_axis(self.axis, d.len() + 1, None, self.name())?;
                let mut out = d.to_vec();
                out.insert(axis, depth.map_or(Dim::DYNAMIC, |v| Dim::fixed(v as u64)));
                PartialShape::new(out)
            }
            None => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [indices, depth, on, off] = take_inputs::<4>(inputs, self.name())?;
        let depth = ints(&depth, 1)?
            .first()
            .copied()
            .filter(|&d| d >= 0)
            .ok_or_else(|| {
                OpError::input(
                    1,
                    codes::BAD_VALUE,
                    "OneHot-1: depth must be one non-negative integer",
                )
            })? as usize;
        let mut idx = IndexValues::of(&indices)
            .ok_or_else(|| OpError::input(0, codes::ELEMENT_TYPE, "indices must be integers"))?
            .to_vec();
        if self.normalize {
            for i in idx.iter_mut().filter(|i| **i < 0) {
                *i += depth as i64;
            }
        }
        let is = indices.shape();
        let axis = norm_axis(self.axis, is.len() + 1, None, self.name())?;
        let (outer, inner): (usize, usize) =
            (is[..axis].iter().product(), is[axis..].iter().product());
        let mut shape = is.to_vec();
        shape.insert(axis, depth);
        if on.len() != 1 || off.len() != 1 || on.element_type() != off.element_type() {
            return Err(OpError::input(
                2,
                codes::RUN_SHAPE,
                "OneHot-1: on_value and off_value must be scalars of one type",
            ));
        }
        let (on_w, off_w) = (
            on.words().ok_or_else(|| no_strings(self.name()))?,
            off.words().ok_or_else(|| no_strings(self.name()))?,
        );
        let out = with_words!(on_w, w => fill(w, off_w, &idx, outer, depth, inner)?);
        Ok(vec![output(on.element_type(), shape, out)?])
    }
}

/// `on` and `off` are one-element word slices of one width (checked by the caller).
fn fill<W: Word>(
    on: &[W],
    off: Words<'_>,
    idx: &[i64],
    outer: usize,
    depth: usize,
    inner: usize,
) -> Result<WordVec, OpError> {
    let bad = || {
        OpError::input(
            3,
            codes::RUN_SHAPE,
            "OneHot-1: on_value and off_value differ",
        )
    };
    let on = *on.first().ok_or_else(bad)?;
    let off = *W::of(off).and_then(|v| v.first()).ok_or_else(bad)?;
    let mut out = try_zeroed::<W>(outer * depth * inner)?;
    out.fill(off);
    for o in 0..outer {
        for i in 0..inner {
            let v = idx[o * inner + i];
            if v >= 0 && (v as usize) < depth {
                out[(o * depth + v as usize) * inner + i] = on;
            }
        }
    }
    Ok(W::into_word_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn v1(axis: i64) -> OneHot {
        OneHot {
            axis,
            version: 1,
            normalize: false,
        }
    }

    /// OneHot-16 `normalize`: -1 is the last class, -depth the first, below that all off;
    /// `ignore_negative` is OneHot-1's rule.
    #[test]
    fn normalize_counts_negative_indices_from_the_end() {
        let inputs = || {
            vec![
                i64s(&[4], &[-1, -3, -4, 1]),
                i64s(&[], &[3]),
                f32s(&[], &[1.]),
                f32s(&[], &[0.]),
            ]
        };
        let normalize = OneHot {
            axis: -1,
            version: 16,
            normalize: true,
        };
        assert_eq!(normalize.name(), "OneHot-16");
        let out = run(&normalize, inputs()).unwrap();
        #[rustfmt::skip]
        let want = [0., 0., 1.,  1., 0., 0.,  0., 0., 0.,  0., 1., 0.];
        assert_eq!(out[0], f32s(&[4, 3], &want));
        let ignore = OneHot {
            normalize: false,
            ..normalize
        };
        #[rustfmt::skip]
        let want = [0., 0., 0.,  0., 0., 0.,  0., 0., 0.,  0., 1., 0.];
        assert_eq!(run(&ignore, inputs()).unwrap()[0], f32s(&[4, 3], &want));
    }

    #[test]
    fn rows_of_on_and_off() {
        let out = run(
            &v1(-1),
            vec![
                i64s(&[3], &[1, -1, 5]),
                i64s(&[], &[3]),
                f32s(&[], &[1.]),
                f32s(&[], &[0.]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], f32s(&[3, 3], &[0., 1., 0., 0., 0., 0., 0., 0., 0.]));
        let out = run(
            &v1(0),
            vec![
                i32s(&[2], &[0, 2]),
                i32s(&[], &[3]),
                i64s(&[], &[5]),
                i64s(&[], &[-1]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], i64s(&[3, 2], &[5, -1, -1, -1, -1, 5]));
        let f = infer1(
            &v1(1),
            &[
                fact(I64, "2,?"),
                i64_scalar(4),
                fact(F32, ""),
                fact(F32, ""),
            ],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,4,?]");
    }
}
