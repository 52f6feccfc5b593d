//! ScatterNDUpdate-3 (written `opset4`) and -15: `indices` is an array of k-tuples addressing
//! elements (k = rank) or slices (k < rank) of `data`; each gets the matching slice of `updates`.
//!
//! Inputs: data (rank r >= 1), indices (rank q >= 1, i32/i64, last dim k <= r), updates of shape
//! `indices.shape[:-1] + data.shape[k:]`. v15 adds `reduction` (none, sum, sub, prod, min, max).

use super::{dims_compatible, fmt_dims, merge_data_updates, Reduction};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError};
use irun_tensor::ElementType;

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterNDUpdate {
    /// 3 or 15.
    pub version: u32,
    pub reduction: Reduction,
}

pub fn build_v3(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ScatterNDUpdate {
        version: 3,
        reduction: Reduction::None,
    }))
}

pub fn build_v15(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let reduction = Reduction::parse(a.enum_or(
        "reduction",
        &["none", "sum", "sub", "prod", "min", "max"],
        "none",
    )?);
    Ok(Box::new(ScatterNDUpdate {
        version: 15,
        reduction,
    }))
}

impl Op for ScatterNDUpdate {
    fn name(&self) -> &'static str {
        if self.version == 3 {
            "ScatterNDUpdate-3"
        } else {
            "ScatterNDUpdate-15"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        let (data, indices, updates) = (&inputs[0], &inputs[1], &inputs[2]);
        if !matches!(
            indices.ty,
            ElementType::I32 | ElementType::I64 | ElementType::Dynamic
        ) {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "Indices element type must be i64 or i32, got {}",
                    indices.ty
                ),
            ));
        }
        let ty = merge_data_updates(
            data,
            updates,
            2,
            "Updates element type must be the same as inputs",
        )?;
        if indices.rank() == Some(0) || data.rank() == Some(0) {
            return Err(OpError::input(
                if indices.rank() == Some(0) { 1 } else { 0 },
                codes::RANK,
                "Indices rank and inputs_rank are expected to be at least 1",
            ));
        }
        let out = Fact::new(ty, data.shape.clone());
        let (Some(dd), Some(id)) = (data.shape.dims(), indices.shape.dims()) else {
            return Ok(vec![out]);
        };
        let (r, q) = (dd.len(), id.len());
        let Some(k) = id[q - 1].get_static() else {
            return Ok(vec![out]);
        };
        let k = k as usize;
        if k > r {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!("Last dimension of indices can be at most the rank of inputs: {k} > {r}"),
            ));
        }
        let Some(ud) = updates.shape.dims() else {
            return Ok(vec![out]);
        };
        let expected_rank = r + q - 1 - k;
        if expected_rank == 0 {
            // OpenVINO accepts any updates shape here (its checks become vacuous); the spec says
            // "a tensor with a single element". Stricter: 0-D or exactly one element.
            let one = ud.iter().all(|d| d.contains(1));
            if !one {
                return Err(OpError::input(2, codes::SHAPE, format!("updates must be a scalar or hold a single element (each tuple addresses one element), got {}", updates.shape)));
            }
            return Ok(vec![out]);
        }
        if ud.len() != expected_rank {
            return Err(OpError::input(
                2,
                codes::RANK,
                format!("Rank of updates must be rank of inputs + rank of indices - last dimension of indices - 1: expected {expected_rank}, got {} ({})", ud.len(), updates.shape),
            ));
        }
        if !dims_compatible(&ud[..q - 1], &id[..q - 1]) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!(
                    "updates_shape[0:indices_rank-1] shape must be indices_shape[:-1]: {} vs {}",
                    fmt_dims(&ud[..q - 1]),
                    fmt_dims(&id[..q - 1])
                ),
            ));
        }
        if !dims_compatible(&ud[q - 1..], &dd[k..]) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!("updates_shape[indices_rank-1:] shape must be input_shape[indices_shape[-1]:]: {} vs {}", fmt_dims(&ud[q - 1..]), fmt_dims(&dd[k..])),
            ));
        }
        Ok(vec![out])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{err, fact, infer1};
    use irun_tensor::ElementType::*;

    fn both() -> [ScatterNDUpdate; 2] {
        [
            ScatterNDUpdate {
                version: 3,
                reduction: Reduction::None,
            },
            ScatterNDUpdate {
                version: 15,
                reduction: Reduction::Max,
            },
        ]
    }

    fn snd(op: &ScatterNDUpdate, data: &str, idx: &str, upd: &str) -> Result<Fact, OpError> {
        infer1(op, &[fact(F32, data), fact(I32, idx), fact(F32, upd)])
    }

    /// type_prop scatter_nd_update_* failures.
    #[test]
    fn invalid_cases() {
        for op in both() {
            let e = err(infer1(
                &op,
                &[fact(F32, "3,3"), fact(F16, "1"), fact(F32, "3")],
            ));
            assert!(e
                .message
                .contains("Indices element type must be i64 or i32"));
            let e = err(snd(&op, "3,3,3", "1", "3,3,3"));
            assert!(e.message.contains("Rank of updates must be rank of inputs + rank of indices - last dimension of indices - 1"), "{}", e.message);
            let e = err(infer1(
                &op,
                &[fact(F32, "3,3,3"), fact(I32, "1"), fact(I32, "3,3")],
            ));
            assert!(e
                .message
                .contains("Updates element type must be the same as inputs"));
            let e = err(snd(&op, "3,3,3", "1", "2,3"));
            assert!(e.message.contains(
                "updates_shape[indices_rank-1:] shape must be input_shape[indices_shape[-1]:]"
            ));
            let e = err(snd(&op, "3,3,3", "2,4", "2"));
            assert!(e
                .message
                .contains("Last dimension of indices can be at most the rank of inputs"));
            let e = err(snd(&op, "3,3", "", "3"));
            assert!(e.message.contains("at least 1"));
            let e = err(snd(&op, "4,4", "3,1", "2,4"));
            assert!(e
                .message
                .contains("updates_shape[0:indices_rank-1] shape must be indices_shape[:-1]"));
        }
    }

    /// type_prop data_input_partial_shape_and_symbols_propagation, *_is_dynamic,
    /// indicies_input_has_interval_dimensions, updates_input_is_scalar, *_dynamic_type, default_ctor.
    #[test]
    fn valid_cases() {
        for op in both() {
            let fixture = "2..5,2,4..10";
            assert_eq!(
                snd(&op, fixture, "3,2", "3,5").unwrap().shape.to_string(),
                "[2..5,2,4..10]"
            );
            assert_eq!(
                snd(&op, fixture, "...", "3,5").unwrap().shape.to_string(),
                "[2..5,2,4..10]"
            );
            assert_eq!(
                snd(&op, fixture, "3,2", "...").unwrap().shape.to_string(),
                "[2..5,2,4..10]"
            );
            assert_eq!(
                snd(&op, "3,2,10", "0..3,1", "3,2,8..10")
                    .unwrap()
                    .shape
                    .to_string(),
                "[3,2,10]"
            );
            assert!(snd(&op, "3,2,10", "3", "").is_ok());
            let out = infer1(
                &op,
                &[
                    fact(Dynamic, "3,4"),
                    fact(Dynamic, "2,1"),
                    fact(Dynamic, "2,4"),
                ],
            )
            .unwrap();
            assert_eq!(out.ty, Dynamic);
            assert_eq!(
                snd(&op, "2,3,5,1", "1,3", "1,1").unwrap().shape.to_string(),
                "[2,3,5,1]"
            );
            // spec example 2 and the PointPillars shape.
            assert!(snd(&op, "4,4,4", "2,1", "2,4,4").is_ok());
            assert!(snd(&op, "214272,64", "12000,1", "12000,64").is_ok());
        }
    }

    /// Stricter than OpenVINO: with an expected 0-D update, only a single element is accepted.
    #[test]
    fn zero_d_update_loophole_is_closed() {
        for op in both() {
            assert!(snd(&op, "4,5", "2", "").is_ok());
            assert!(snd(&op, "4,5", "2", "1").is_ok());
            let e = err(snd(&op, "4,5", "2", "2,7"));
            assert!(e.message.contains("single element"), "{}", e.message);
        }
    }
}
