//! The scatter family: ScatterUpdate-3, ScatterElementsUpdate-3/12, ScatterNDUpdate-3/15.
//! Validation follows reference doc section 2 (OpenVINO's rules and messages) plus the stricter
//! rules of DESIGN.md, each marked "stricter than OpenVINO" where it is checked.

pub mod elements_update;
pub mod nd_update;
pub mod update;

use irun_tensor::{Dim, ElementType, PartialShape};

use crate::fact::Fact;
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
    pub fn parse(s: &str) -> Reduction {
        match s {
            "sum" => Reduction::Sum,
            "sub" => Reduction::Sub,
            "prod" => Reduction::Prod,
            "min" => Reduction::Min,
            "max" => Reduction::Max,
            "mean" => Reduction::Mean,
            _ => Reduction::None,
        }
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
