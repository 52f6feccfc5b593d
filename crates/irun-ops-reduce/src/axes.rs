//! The shape side of reducing over a set of axes: which dims go, the output shape, and the
//! layout the kernels run on, `[outer, reduced, inner]`, reached by a strided copy when the
//! reduced dims are not adjacent.

use std::borrow::Cow;

use irun_tensor::{Dim, PartialShape, Tensor};

use crate::op::{codes, OpError};
use crate::strided::Strided;
use crate::util::{norm_axis, output};

/// Normalised, deduplicated, sorted axes of a rank-`rank` input (input `slot`).
pub fn normalise(axes: &[i64], rank: usize, slot: usize, op: &str) -> Result<Vec<usize>, OpError> {
    let mut v: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(a, rank, Some(slot), op))
        .collect::<Result<_, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The output dims: reduced ones removed, or 1 with `keep_dims`.
pub fn reduced_dims<T: Copy>(dims: &[T], axes: &[usize], keep_dims: bool, one: T) -> Vec<T> {
    dims.iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep_dims) {
            (false, _) => Some(d),
            (true, true) => Some(one),
            (true, false) => None,
        })
        .collect()
}

/// The partial output shape of a reduction.
pub fn reduced_shape(dims: &[Dim], axes: &[usize], keep_dims: bool) -> PartialShape {
    PartialShape::new(reduced_dims(dims, axes, keep_dims, Dim::fixed(1)))
}

/// `t` laid out as `[outer, reduced, inner]` for `axes`: the tensor itself when the reduced
/// dims are adjacent (after ignoring dims of 1), else a copy with the reduced dims moved last.
pub struct Layout<'a> {
    pub data: Cow<'a, Tensor>,
    pub outer: usize,
    pub reduced: usize,
    pub inner: usize,
}

impl<'a> Layout<'a> {
    pub fn of(t: &'a Tensor, axes: &[usize], op: &str) -> Result<Layout<'a>, OpError> {
        let shape = t.shape();
        let reduced: usize = axes.iter().map(|&a| shape[a]).product();
        let moving: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] != 1).collect();
        let red: Vec<usize> = moving
            .iter()
            .copied()
            .filter(|i| axes.contains(i))
            .collect();
        let contiguous = red.windows(2).all(|w| {
            let (a, b) = (w[0], w[1]);
            moving
                .iter()
                .position(|&x| x == a)
                .zip(moving.iter().position(|&x| x == b))
                .is_some_and(|(p, q)| q == p + 1)
        });
        if contiguous {
            let first = red.first().copied().unwrap_or(shape.len());
            let last = red.last().copied().map_or(shape.len(), |l| l + 1);
            let (outer, inner) = if red.is_empty() {
                (shape.iter().product(), 1)
            } else {
                (
                    shape[..first].iter().product(),
                    shape[last..].iter().product(),
                )
            };
            return Ok(Layout {
                data: Cow::Borrowed(t),
                outer,
                reduced,
                inner,
            });
        }
        // Kept dims first, reduced dims last, in their orders.
        let perm: Vec<usize> = (0..shape.len())
            .filter(|i| !axes.contains(i))
            .chain(axes.iter().copied())
            .collect();
        let layout = Strided::permuted(shape, &perm);
        let words = layout.apply(t, op)?;
        let moved = output(t.element_type(), layout.out_shape, words)?;
        let outer = (0..shape.len())
            .filter(|i| !axes.contains(i))
            .map(|i| shape[i])
            .product();
        Ok(Layout {
            data: Cow::Owned(std::sync::Arc::unwrap_or_clone(moved)),
            outer,
            reduced,
            inner: 1,
        })
    }
}

/// The error for reducing a boolean or string tensor.
pub fn numeric_only(op: &str, ty: irun_tensor::ElementType) -> OpError {
    OpError::input(
        0,
        codes::ELEMENT_TYPE,
        format!("{op}: input element type must be numeric, got {ty}"),
    )
}
