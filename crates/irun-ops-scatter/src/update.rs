//! ScatterUpdate-3: overwrite whole slices of `data` along `axis` at the positions in `indices`.
//!
//! Inputs: data (rank r >= 1), indices (any rank q, 0-D allowed, integer), updates of shape
//! `data[:axis] + indices.shape + data[axis+1:]`, axis (scalar or `[1]`, integer). Output: data's
//! shape and type. Negative indices are rejected at run time (not normalised, per the spec).

use std::sync::Arc;

use crate::par;
use irun_tensor::fmt_shape;

use super::reduce::{dispatch, Combine, Elem, MinMaxRule, ReduceKernel};
use super::{
    axis_value, check_same_type, dims_compatible, fmt_dims, index_out_of_range, is_index_type,
    merge_data_updates, normalize_axis, product, runtime_axis, runtime_indices, Reduction,
};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{take_or_copy, PAR_MIN_ELEMENTS};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterUpdate;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ScatterUpdate))
}

impl Op for ScatterUpdate {
    fn name(&self) -> &'static str {
        "ScatterUpdate-3"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[3]
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, indices, updates, axis] = take_inputs::<4>(inputs, self.name())?;
        check_same_type(&data, &updates)?;
        if axis.len() != 1 {
            return Err(OpError::input(
                3,
                codes::RUN_SHAPE,
                format!(
                    "Axis input shape is required to be scalar or 1D tensor. Got: {}",
                    fmt_shape(axis.shape())
                ),
            ));
        }
        let d = data.shape();
        let axis = runtime_axis(&axis, d.len(), 3)?;
        // The spec's layout, checked at run time as OpenVINO's CPU plugin does (inference can
        // check it only with a constant axis).
        let expected: Vec<usize> = d[..axis]
            .iter()
            .chain(indices.shape())
            .chain(&d[axis + 1..])
            .copied()
            .collect();
        if updates.shape() != expected.as_slice() {
            return Err(OpError::input(
                2,
                codes::RUN_SHAPE,
                format!(
                    "updates shape {} must be data[:axis] + indices.shape + data[axis+1:] = {} (data {}, indices {}, axis {axis})",
                    fmt_shape(updates.shape()),
                    fmt_shape(&expected),
                    fmt_shape(d),
                    fmt_shape(indices.shape())
                ),
            ));
        }
        // Negative indices are errors here (spec and OpenVINO), not normalised.
        let along = d[axis];
        let values = runtime_indices(&indices)?.to_vec();
        let mut winner = vec![usize::MAX; along];
        for (j, &v) in values.iter().enumerate() {
            if v < 0 || v >= along as i64 {
                return Err(index_out_of_range(
                    indices.shape(),
                    j,
                    v,
                    &format!("[0, {}]", along as i64 - 1),
                    &format!("axis {axis} of size {along}"),
                ));
            }
            // Duplicates: the last in row-major order wins, so only it is ever copied.
            winner[v as usize] = j;
        }
        let kernel = UpdateKernel {
            hits: winner
                .iter()
                .enumerate()
                .filter(|&(_, &j)| j != usize::MAX)
                .map(|(a, &j)| (a, j))
                .collect(),
            along,
            count: values.len(),
            inner: product(&d[axis + 1..]),
        };
        let mut out = take_or_copy(data);
        dispatch(
            &kernel,
            &mut out,
            &updates,
            Reduction::None,
            MinMaxRule::Elements,
        )?;
        Ok(vec![Arc::new(out)])
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 4, self.name())?;
        let (data, indices, updates, axis) = (&inputs[0], &inputs[1], &inputs[2], &inputs[3]);
        if !indices.ty.is_integral_number() || !is_index_type(indices.ty) {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "Indices element type must be of an integral number type, got {}",
                    indices.ty
                ),
            ));
        }
        merge_data_updates(
            data,
            updates,
            2,
            "Element types for input data and updates do not match",
        )?;
        if !axis.ty.is_integral_number() || !is_index_type(axis.ty) {
            return Err(OpError::input(
                3,
                codes::ELEMENT_TYPE,
                format!(
                    "Axis element type must be of an integral number type, got {}",
                    axis.ty
                ),
            ));
        }
        if let Some(d) = axis.shape.dims() {
            let ok = d.is_empty() || (d.len() == 1 && d[0].contains(1));
            if !ok {
                return Err(OpError::input(3, codes::RANK, format!("Axis input shape is required to be scalar or 1D tensor of one element. Got: {}", axis.shape)));
            }
        }
        if let (Some(r), Some(q), Some(u)) = (data.rank(), indices.rank(), updates.rank()) {
            if r == 0 {
                return Err(OpError::input(
                    0,
                    codes::RANK,
                    "ScatterUpdate data must have rank >= 1",
                ));
            }
            if u != q + r - 1 {
                return Err(OpError::input(
                    2,
                    codes::RANK,
                    format!("Updates rank is expected to be rank(indices) + rank(data) - 1. Got: rank(data) = {r}, rank(indices) = {q}, rank(updates) = {u}"),
                ));
            }
        }
        let out = Fact::new(data.ty, data.shape.clone());
        let (Some(r), Some(a)) = (data.rank(), axis_value(axis)) else {
            return Ok(vec![out]);
        };
        let a = normalize_axis(a, r, 3)?;
        if let (Some(dd), Some(id), Some(ud)) = (
            data.shape.dims(),
            indices.shape.dims(),
            updates.shape.dims(),
        ) {
            let expected: Vec<_> = dd[..a]
                .iter()
                .chain(id)
                .chain(&dd[a + 1..])
                .copied()
                .collect();
            if !dims_compatible(&expected, ud) {
                return Err(OpError::input(
                    2,
                    codes::SHAPE,
                    format!(
                        "Updates shape must have appropriate dimensions equal to indices and data dimensions. Updates shape: {}, data shape: {}, indices shape: {}, axis: {a} (expected {})",
                        fmt_dims(ud), data.shape, indices.shape, fmt_dims(&expected)
                    ),
                ));
            }
        }
        Ok(vec![out])
    }
}

/// Copies, for each output slice `[o, t, :]`, the update slice `[o, j, :]` of the last index
/// `j` that names `t`. Every output slice has at most one source, so slices are copied in
/// parallel and the result does not depend on the thread count.
struct UpdateKernel {
    /// `(position along the axis, the last index position naming it)` of every position some
    /// index names, by position: a KV cache step touches 16 of 4096, and the kernel's work is
    /// those slices, not a scan of the whole output.
    hits: Vec<(usize, usize)>,
    /// The data's size along the axis.
    along: usize,
    /// Number of index values.
    count: usize,
    /// Elements per slice: the product of the data dims after the axis.
    inner: usize,
}

impl ReduceKernel for UpdateKernel {
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        let (inner, along) = (self.inner, self.along);
        if out.is_empty() || inner == 0 || self.hits.is_empty() {
            return Ok(());
        }
        // Whole slices per task, at least PAR_MIN_ELEMENTS elements each. A task walks the
        // outer rows its part overlaps and, in each, the hits inside the part.
        let per_task = (PAR_MIN_ELEMENTS / inner).max(1) * inner;
        par::for_each_split_mut(out, per_task, &|start, part| {
            let first = start / inner;
            let end = first + part.len() / inner;
            let mut b = first;
            while b < end {
                let row = b / along;
                let row_end = ((row + 1) * along).min(end);
                let (lo, hi) = (b - row * along, row_end - row * along);
                let from = self.hits.partition_point(|&(a, _)| a < lo);
                for &(a, j) in self.hits[from..].iter().take_while(|&&(a, _)| a < hi) {
                    let dst = (row * along + a - first) * inner;
                    let src = (row * self.count + j) * inner;
                    for (d, &u) in part[dst..dst + inner]
                        .iter_mut()
                        .zip(&updates[src..src + inner])
                    {
                        *d = C::apply(*d, u);
                    }
                }
                b = row_end;
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{err, fact, infer1, scalar_i64};
    use irun_tensor::ElementType::*;

    fn su(data: &str, idx: &str, upd: &str, axis: Fact) -> Result<Fact, OpError> {
        infer1(
            &ScatterUpdate,
            &[fact(F32, data), fact(I32, idx), fact(F32, upd), axis],
        )
    }

    /// type_prop scatter_update_output_type_check_*: output type = data type.
    #[test]
    fn output_type_is_data_type() {
        for t in [F16, F32, Bf16, I8, I16, I32, I64, U8, U16, U32, U64] {
            let out = infer1(
                &ScatterUpdate,
                &[
                    fact(t, "2,3,4"),
                    fact(I32, "2,1"),
                    fact(t, "2,2,1,4"),
                    scalar_i64(1),
                ],
            )
            .unwrap();
            assert_eq!((out.ty, out.shape.to_string()), (t, "[2,3,4]".into()));
        }
    }

    #[test]
    fn element_type_failures() {
        let e = err(infer1(
            &ScatterUpdate,
            &[
                fact(F32, "2,3,4"),
                fact(I32, "2,1"),
                fact(U32, "2,2,1,4"),
                scalar_i64(1),
            ],
        ));
        assert!(
            e.message
                .contains("Element types for input data and updates do not match")
                && e.code == codes::ELEMENT_TYPE
        );
        let e = err(infer1(
            &ScatterUpdate,
            &[
                fact(F32, "2,3,4"),
                fact(F16, "2,1"),
                fact(F32, "2,2,1,4"),
                scalar_i64(1),
            ],
        ));
        assert!(e
            .message
            .contains("Indices element type must be of an integral number type"));
        let axis = fact(F32, "");
        let e = err(infer1(
            &ScatterUpdate,
            &[
                fact(F32, "2,3,4"),
                fact(I32, "2,1"),
                fact(F32, "2,2,1,4"),
                axis,
            ],
        ));
        assert!(e
            .message
            .contains("Axis element type must be of an integral number type"));
        // boolean indices: rejected (is_integral_number is false for boolean).
        let e = err(infer1(
            &ScatterUpdate,
            &[
                fact(F32, "2,3,4"),
                fact(Boolean, "2,1"),
                fact(F32, "2,2,1,4"),
                scalar_i64(1),
            ],
        ));
        assert_eq!(e.port, Some((irun_ir::PortDirection::Input, 1)));
    }

    /// type_prop scatter_update_v3_fail_updates_rank / _shape_* / _axis_shape.
    #[test]
    fn shape_failures() {
        let e = err(su("2,3,4", "2,1", "2,1,4", scalar_i64(0)));
        assert!(e
            .message
            .contains("Updates rank is expected to be rank(indices) + rank(data) - 1"));
        for (upd, axis) in [
            ("2,2,1,4", 0),
            ("2,3,1,4", 1),
            ("3,2,1,4", 1),
            ("2,2,1,5", 1),
        ] {
            let e = err(su("2,3,4", "2,1", upd, scalar_i64(axis)));
            assert!(e.message.contains("Updates shape must have appropriate dimensions equal to indices and data dimensions"), "{upd}");
            assert_eq!(e.code, codes::SHAPE);
        }
        let axis = fact(I64, "2");
        let e = err(su("2,3,4", "2,1", "2,2,1,4", axis));
        assert!(e
            .message
            .contains("Axis input shape is required to be scalar or 1D tensor"));
        let e = err(su("2,3,4", "2,1", "2,2,1,4", scalar_i64(3)));
        assert_eq!(
            (e.code, e.message.as_str()),
            (codes::AXIS, "Axis 3 out of the tensor rank range [-3, 2]")
        );
    }

    /// Without a constant axis no dim check happens (OpenVINO behaviour).
    #[test]
    fn dynamic_axis_skips_dim_check_and_dynamic_data_passes() {
        assert!(su("2,3,4", "2,1", "9,9,9,9", fact(I64, "")).is_ok());
        let out = infer1(
            &ScatterUpdate,
            &[
                fact(I8, "..."),
                fact(I16, "2,1"),
                fact(I8, "..."),
                scalar_i64(1),
            ],
        )
        .unwrap();
        assert_eq!((out.ty, out.shape.to_string()), (I8, "[...]".into()));
    }

    /// type_prop scatter_update_v3_interval_label_data_shape; spec example of ScatterUpdate-3.
    #[test]
    fn intervals_and_spec_example() {
        let out = su("?,2..8,1..9,4", "2,1", "3,2,1,2,4", scalar_i64(1)).unwrap();
        assert_eq!(out.shape.to_string(), "[?,2..8,1..9,4]");
        let out = su(
            "1000,256,10,15",
            "125,20",
            "1000,125,20,10,15",
            scalar_i64(1),
        )
        .unwrap();
        assert_eq!(out.shape.to_string(), "[1000,256,10,15]");
        assert!(su("3,4", "", "4", scalar_i64(0)).is_ok(), "0-D indices");
        assert!(
            su("3,4", "2", "2,4", scalar_i64(-2)).is_ok(),
            "negative axis"
        );
    }

    mod eval {
        use super::*;
        use crate::testing::{eval1, f32s, i64s};

        fn run(
            data: &[usize],
            idx: irun_tensor::Tensor,
            upd: &[usize],
            axis: i64,
        ) -> Result<Vec<f32>, OpError> {
            let n: usize = data.iter().product();
            let m: usize = upd.iter().product();
            eval1(
                &ScatterUpdate,
                vec![
                    f32s(data, &vec![0.0; n]),
                    idx,
                    f32s(upd, &(1..=m).map(|x| x as f32).collect::<Vec<_>>()),
                    i64s(&[], &[axis]),
                ],
            )
            .map(|t| t.values::<f32>().unwrap().to_vec())
        }

        /// Reference doc 2.1: shapes where OpenVINO's core reference deviates from the spec.
        #[test]
        fn follows_the_spec_formula() {
            let out = run(&[3, 3, 1], i64s(&[1, 3], &[2, 0, 1]), &[1, 3, 3, 1], 0).unwrap();
            assert_eq!(out, [4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 2.0, 3.0]);
            let out = run(&[2, 2, 1, 1], i64s(&[], &[1]), &[2, 1, 1], 0).unwrap();
            assert_eq!(out, [0.0, 0.0, 1.0, 2.0]);
            let out = run(&[1, 1, 2], i64s(&[], &[0]), &[1, 2], 1).unwrap();
            assert_eq!(out, [1.0, 2.0]);
            let out = run(&[3, 2, 2, 2], i64s(&[], &[1]), &[3, 2, 2], 3).unwrap();
            assert_eq!(out.iter().filter(|&&x| x != 0.0).count(), 12);
        }

        #[test]
        fn last_duplicate_wins() {
            let out = run(&[3, 2], i64s(&[3], &[1, 1, 1]), &[3, 2], 0).unwrap();
            assert_eq!(out, [0.0, 0.0, 5.0, 6.0, 0.0, 0.0]);
        }

        #[test]
        fn negative_and_wrong_shapes_are_errors() {
            let e = run(&[3, 2], i64s(&[1], &[-1]), &[1, 2], 0).unwrap_err();
            assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
            assert!(
                e.message.contains("index -1 at position [0]"),
                "{}",
                e.message
            );
            let e = run(&[3, 2], i64s(&[1], &[0]), &[2, 2], 0).unwrap_err();
            assert_eq!(e.code, codes::RUN_SHAPE);
        }
    }
}
