//! AdaptiveAvgPool-8 and AdaptiveMaxPool-8 (`torch.nn.AdaptiveAvgPool2d` and its max
//! twin, as OpenVINO's PyTorch converter writes them): `data [N, C, *spatial]` (1 to 3
//! spatial dims) pooled to the sizes `output_shape` gives (1-D, one integer per spatial dim).
//!
//! - Output index `i` of a dim of input size `I` and output size `O` pools the input from
//!   `floor(i·I / O)` to `ceil((i + 1)·I / O)` (exclusive): windows of varying size that may
//!   overlap, and cover the input.
//! - Average: the window's sum in f64 over its size, rounded to the data's type once.
//! - Max: the window's largest value (the first of equal ones) and, in a second output of
//!   `index_element_type` (i64 or i32), its index in the flattened spatial dims of its plane.

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::known_ints;

#[derive(Debug)]
pub struct AdaptivePool {
    /// `Some(index type)` for AdaptiveMaxPool, `None` for AdaptiveAvgPool.
    pub max: Option<ElementType>,
}

pub fn build_avg(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(AdaptivePool { max: None }))
}

pub fn build_max(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let index = match a.enum_or("index_element_type", &["i64", "i32"], "i64")? {
        "i32" => ElementType::I32,
        _ => ElementType::I64,
    };
    Ok(Box::new(AdaptivePool { max: Some(index) }))
}

/// The input range `[start, end)` that output `i` of `out` pools from `len` inputs.
fn window(i: usize, len: usize, out: usize) -> (usize, usize) {
    (i * len / out, ((i + 1) * len).div_ceil(out))
}

impl AdaptivePool {
    /// The output sizes from `output_shape`'s values, one per spatial dim of a rank-`rank`
    /// input.
    fn sizes(&self, rank: usize, values: &[i64]) -> Result<Vec<usize>, OpError> {
        let spatial = rank.saturating_sub(2);
        if values.len() != spatial {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!(
                    "{}: output_shape holds {} sizes for {spatial} spatial dims",
                    self.name(),
                    values.len()
                ),
            ));
        }
        values
            .iter()
            .map(|&v| {
                usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                    OpError::input(
                        1,
                        codes::BAD_VALUE,
                        format!("{}: output sizes must be positive, got {v}", self.name()),
                    )
                })
            })
            .collect()
    }

    /// `(value, flat spatial index)` of each output of one plane `x` of dims `input`,
    /// appended to `dst` (the index is 0 for averages).
    fn pool_plane<T: Number>(
        &self,
        x: &[T],
        input: &[usize],
        out: &[usize],
        dst: &mut crate::par::Filler<'_, (T, i64)>,
    ) {
        // Dims padded to three (leading 1s), so one loop nest serves 1-D to 3-D.
        let pad = |d: &[usize]| -> [usize; 3] {
            let mut v = [1; 3];
            v[3 - d.len()..].copy_from_slice(d);
            v
        };
        let ([id, ih, iw], [od, oh, ow]) = (pad(input), pad(out));
        for z in 0..od {
            let (z0, z1) = window(z, id, od);
            for y in 0..oh {
                let (y0, y1) = window(y, ih, oh);
                for xo in 0..ow {
                    let (x0, x1) = window(xo, iw, ow);
                    let at = |a: usize, b: usize, c: usize| (a * ih + b) * iw + c;
                    if self.max.is_some() {
                        let mut best = (x[at(z0, y0, x0)], at(z0, y0, x0));
                        for a in z0..z1 {
                            for b in y0..y1 {
                                for c in x0..x1 {
                                    let v = x[at(a, b, c)];
                                    if v.to_f64() > best.0.to_f64() {
                                        best = (v, at(a, b, c));
                                    }
                                }
                            }
                        }
                        dst.push((best.0, best.1 as i64));
                    } else {
                        let mut sum = 0f64;
                        for a in z0..z1 {
                            for b in y0..y1 {
                                sum += x[at(a, b, x0)..at(a, b, x1)]
                                    .iter()
                                    .map(|v| v.to_f64())
                                    .sum::<f64>();
                            }
                        }
                        let count = ((z1 - z0) * (y1 - y0) * (x1 - x0)) as f64;
                        dst.push((T::from_f64(sum / count), 0));
                    }
                }
            }
        }
    }
}

impl Op for AdaptivePool {
    fn name(&self) -> &'static str {
        if self.max.is_some() {
            "AdaptiveMaxPool-8"
        } else {
            "AdaptiveAvgPool-8"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let name = self.name();
        expect_inputs(inputs, 2, name)?;
        let (data, sizes) = (&inputs[0], &inputs[1]);
        if data.ty != ElementType::Dynamic && !data.ty.is_real() {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{name}: data must be floats, got {}", data.ty),
            ));
        }
        if sizes.ty != ElementType::Dynamic
            && sizes.ty != ElementType::I32
            && sizes.ty != ElementType::I64
        {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!("{name}: output_shape must be i32 or i64, got {}", sizes.ty),
            ));
        }
        if data.rank().is_some_and(|r| !(3..=5).contains(&r)) {
            return Err(OpError::input(
                0,
                codes::RANK,
                format!("{name}: data {} must be 3-D, 4-D or 5-D", data.shape),
            ));
        }
        if sizes.rank().is_some_and(|r| r != 1) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{name}: output_shape {} must be 1-D", sizes.shape),
            ));
        }
        let shape = match data.shape.dims() {
            Some(d) => {
                let mut out = d[..2].to_vec();
                match known_ints(sizes) {
                    Some(v) => out.extend(
                        self.sizes(d.len(), &v)?
                            .iter()
                            .map(|&s| Dim::fixed(s as u64)),
                    ),
                    None => out.extend(std::iter::repeat_n(Dim::DYNAMIC, d.len() - 2)),
                }
                PartialShape::new(out)
            }
            None => PartialShape::dynamic_rank(),
        };
        let mut out = vec![Fact::new(data.ty, shape.clone())];
        if let Some(index) = self.max {
            out.push(Fact::new(index, shape));
        }
        Ok(out)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let name = self.name();
        let [data, sizes] = take_inputs::<2>(inputs, name)?;
        let dims = data.shape();
        if !(3..=5).contains(&dims.len()) {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{name}: data {dims:?}"),
            ));
        }
        let values = sizes
            .to_i64_vec()
            .ok_or_else(|| OpError::input(1, codes::BAD_VALUE, format!("{name}: output_shape")))?;
        let out = self.sizes(dims.len(), &values)?;
        let (planes, input) = (dims[0] * dims[1], &dims[2..]);
        if input.contains(&0) {
            return Err(OpError::input(
                0,
                codes::SHAPE,
                format!("{name}: cannot pool an empty spatial dim of {dims:?}"),
            ));
        }
        let (in_plane, out_plane) = (
            input.iter().product::<usize>(),
            out.iter().product::<usize>(),
        );
        let mut shape = dims[..2].to_vec();
        shape.extend(&out);
        let ty = data.element_type();
        let err = |e: irun_tensor::TensorError| OpError::new(codes::RUN_SHAPE, e.to_string());
        let (values, indices) = with_float!(ty, T => {
            let x = data.values::<T>().ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let pooled = crate::par::build(planes * out_plane, out_plane.max(1), &|at, fill| {
                for p in at / out_plane.max(1)..(at + fill.remaining()) / out_plane.max(1) {
                    self.pool_plane(&x[p * in_plane..][..in_plane], input, &out, fill);
                }
            })?;
            let values = Tensor::new(ty, shape.clone(), T::wrap(pooled.iter().map(|p| p.0).collect())).map_err(err)?;
            let indices = self.max.map(|_| pooled.iter().map(|p| p.1).collect::<Vec<i64>>());
            (values, indices)
        }, else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{name} on {ty}"))));
        let mut outs = vec![Arc::new(values)];
        if let (Some(index), Some(indices)) = (self.max, indices) {
            let t = match index {
                ElementType::I32 => {
                    Tensor::from_i32(shape, indices.into_iter().map(|i| i as i32).collect())
                }
                _ => Tensor::from_i64(shape, indices),
            };
            outs.push(Arc::new(t.map_err(err)?));
        }
        Ok(outs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{eval_all, fact, infer1};
    use irun_opkit::testing::prelude::*;

    #[test]
    fn windows_cover_the_input_and_overlap_where_sizes_do_not_divide() {
        // 5 inputs to 3 outputs: [0, 2), [1, 4), [3, 5).
        assert_eq!(
            (0..3).map(|i| window(i, 5, 3)).collect::<Vec<_>>(),
            [(0, 2), (1, 4), (3, 5)]
        );
        // 2 inputs to 4 outputs: each input read twice.
        assert_eq!(
            (0..4).map(|i| window(i, 2, 4)).collect::<Vec<_>>(),
            [(0, 1), (0, 1), (1, 2), (1, 2)]
        );
    }

    #[test]
    fn average_and_max_of_each_window_with_flat_indices() {
        // One 3 x 5 plane of 0..15 pooled to 2 x 3: rows [0, 2) and [1, 3), columns as above.
        let x = f32s(
            &[1, 1, 3, 5],
            &(0..15).map(|v| v as f32).collect::<Vec<_>>(),
        );
        let size = i64s(&[2], &[2, 3]);
        let avg = eval_all(&AdaptivePool { max: None }, vec![x.clone(), size.clone()]).unwrap();
        // Window (rows 0-1, columns 0-1): 0 1 5 6 -> 3; (rows 1-2, columns 3-4): 8 9 13 14.
        assert_eq!(
            avg[0],
            f32s(&[1, 1, 2, 3], &[3.0, 4.5, 6.0, 8.0, 9.5, 11.0])
        );
        let max = eval_all(&AdaptivePool { max: Some(I32) }, vec![x, size]).unwrap();
        assert_eq!(
            max[0],
            f32s(&[1, 1, 2, 3], &[6.0, 8.0, 9.0, 11.0, 13.0, 14.0])
        );
        assert_eq!(max[1], i32s(&[1, 1, 2, 3], &[6, 8, 9, 11, 13, 14]));
    }

    #[test]
    fn the_first_of_equal_maxima_is_taken_in_every_plane() {
        let x = f32s(&[1, 2, 4], &[1.0, 3.0, 3.0, 0.0, -1.0, -1.0, -2.0, -1.0]);
        let max = eval_all(&AdaptivePool { max: Some(I64) }, vec![x, i64s(&[1], &[1])]).unwrap();
        assert_eq!(max[0], f32s(&[1, 2, 1], &[3.0, -1.0]));
        assert_eq!(max[1], i64s(&[1, 2, 1], &[1, 0]));
    }

    #[test]
    fn sizes_are_checked_against_the_spatial_dims() {
        let op = AdaptivePool { max: None };
        let size = |v: &[i64]| Fact::of_static(I64, &[v.len()]).with_value(i64s(&[v.len()], v));
        assert_eq!(
            infer1(&op, &[fact(F32, "2,8,?,9"), size(&[7, 7])])
                .unwrap()
                .shape
                .to_string(),
            "[2,8,7,7]"
        );
        let e = infer1(&op, &[fact(F32, "2,8,9,9"), size(&[7])]).unwrap_err();
        assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
        let e = infer1(&op, &[fact(F32, "2,8,9,9"), size(&[7, 0])]).unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
        let e = infer1(&op, &[fact(F32, "8,9"), size(&[7])]).unwrap_err();
        assert_eq!(e.code, codes::RANK);
        let e = infer1(&op, &[fact(I32, "1,8,9"), size(&[7])]).unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }
}
