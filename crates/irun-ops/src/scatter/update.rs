//! ScatterUpdate-3: overwrite whole slices of `data` along `axis` at the positions in `indices`.
//!
//! Inputs: data (rank r >= 1), indices (any rank q, 0-D allowed, integer), updates of shape
//! `data[:axis] + indices.shape + data[axis+1:]`, axis (scalar or `[1]`, integer). Output: data's
//! shape and type. Negative indices are rejected at run time (not normalised, per the spec).

use super::{
    axis_value, dims_compatible, fmt_dims, is_index_type, merge_data_updates, normalize_axis,
};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError};

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
}
