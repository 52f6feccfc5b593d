//! The scatter family: ScatterUpdate-3, ScatterElementsUpdate-3/12, ScatterNDUpdate-3/15.
//! Validation follows OpenVINO's rules and messages plus the stricter
//! rules of docs/semantics.md (section 6), each marked "stricter than OpenVINO" where it is checked.

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par};

pub mod elem;
pub mod elements_update;
pub mod fill;
pub mod nd_update;
pub mod reduce;
pub mod update;
pub mod updates;

use irun_tensor::{fmt_shape, Dim, ElementType, PartialShape, Tensor};

use crate::fact::Fact;
use crate::kernel::{coordinates, IndexValues};
use crate::op::{codes, OpError};

/// Reductions of ScatterElementsUpdate-12 and ScatterNDUpdate-15.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Sum,
    Sub,
    Prod,
    Min,
    Max,
    Mean,
}

impl Reduction {
    /// The reduction an attribute value names; an error for any other value, even one an
    /// earlier check should have caught (nothing silently becomes `none`).
    pub fn parse(s: &str) -> Result<Reduction, OpError> {
        Ok(match s {
            "none" => Reduction::None,
            "sum" => Reduction::Sum,
            "sub" => Reduction::Sub,
            "prod" => Reduction::Prod,
            "min" => Reduction::Min,
            "max" => Reduction::Max,
            "mean" => Reduction::Mean,
            other => {
                return Err(OpError::attribute(
                    "reduction",
                    format!("`reduction=\"{other}\"` is not a reduction"),
                ))
            }
        })
    }
}

/// Element 0 of a known axis input, as OpenVINO reads it.
pub fn axis_value(axis: &Fact) -> Option<i64> {
    axis.value.as_ref()?.to_i64_vec()?.first().copied()
}

/// `axis` in `[-rank, rank-1]`, normalised to `0..rank`.
pub fn normalize_axis(axis: i64, rank: usize, slot: usize) -> Result<usize, OpError> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(OpError::input(
            slot,
            codes::AXIS,
            format!(
                "Axis {axis} out of the tensor rank range [{}, {}]",
                -r,
                r - 1
            ),
        ));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// OpenVINO's element type merge of data and updates.
pub fn merge_data_updates(
    data: &Fact,
    updates: &Fact,
    updates_slot: usize,
    what: &str,
) -> Result<ElementType, OpError> {
    data.ty.merge(updates.ty).ok_or_else(|| {
        OpError::input(
            updates_slot,
            codes::ELEMENT_TYPE,
            format!(
                "{what} (data element type: {}, updates element type: {})",
                data.ty, updates.ty
            ),
        )
    })
}

/// Index element types irun accepts: the integer types (stricter than OpenVINO, which lets
/// boolean, u1, nf4 and string through the validation of some ops and cannot run them).
pub fn is_index_type(t: ElementType) -> bool {
    use ElementType::*;
    matches!(t, Dynamic | I8 | I16 | I32 | I64 | U8 | U16 | U32 | U64)
}

/// Whether two dim lists are pairwise compatible (same length, intersecting intervals).
pub fn dims_compatible(a: &[Dim], b: &[Dim]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(*y))
}

pub fn fmt_dims(d: &[Dim]) -> String {
    PartialShape::new(d.to_vec()).to_string()
}

/// The axis of a scatter op at run time: element 0 of the axis tensor, normalised.
pub fn runtime_axis(axis: &Tensor, rank: usize, slot: usize) -> Result<usize, OpError> {
    let v = IndexValues::of(axis)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            OpError::input(
                slot,
                codes::RUN_SHAPE,
                format!(
                    "the axis must be a non-empty integer tensor, got {} {}",
                    axis.element_type(),
                    fmt_shape(axis.shape())
                ),
            )
        })?;
    let mut first = [0i64];
    v.read(0..1, &mut first);
    normalize_axis(first[0], rank, slot)
}

/// The values of the indices input (slot 1), which must be an integer tensor.
pub fn runtime_indices(indices: &Tensor) -> Result<IndexValues<'_>, OpError> {
    IndexValues::of(indices).ok_or_else(|| {
        OpError::input(
            1,
            codes::ELEMENT_TYPE,
            format!(
                "indices must be an integer tensor, got {}",
                indices.element_type()
            ),
        )
    })
}

/// The error for index `value` at flat position `pos` of the indices (input 1).
pub fn index_out_of_range(
    indices_shape: &[usize],
    pos: usize,
    value: i64,
    allowed: &str,
    what: &str,
) -> OpError {
    let at: Vec<String> = coordinates(indices_shape, pos)
        .iter()
        .map(|c| c.to_string())
        .collect();
    OpError::input(
        1,
        codes::INDEX_OUT_OF_RANGE,
        format!(
            "index {value} at position [{}] of input 1 (indices) is out of range {allowed} for {what}",
            at.join(",")
        ),
    )
}

/// Data and updates must have the same element type at run time.
pub fn check_same_type(data: &Tensor, updates: &Tensor) -> Result<(), OpError> {
    if data.element_type() != updates.element_type() {
        return Err(OpError::input(
            2,
            codes::ELEMENT_TYPE,
            format!(
                "updates are {} but data is {}",
                updates.element_type(),
                data.element_type()
            ),
        ));
    }
    Ok(())
}

/// The product of `dims` (callers pass dims of existing tensors, whose products fit).
pub fn product(dims: &[usize]) -> usize {
    dims.iter().product()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown reduction is an error, never a silent `none` (hostile-input rule).
    #[test]
    fn reduction_names_are_strict() {
        assert_eq!(Reduction::parse("none"), Ok(Reduction::None));
        assert_eq!(Reduction::parse("mean"), Ok(Reduction::Mean));
        let e = Reduction::parse("avg").unwrap_err();
        assert_eq!(e.code, codes::BAD_ATTRIBUTE);
        assert_eq!(e.attribute.as_deref(), Some("reduction"));
        assert!(Reduction::parse("").is_err());
    }
}
