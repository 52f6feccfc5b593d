//! How positions of the indices map to output offsets, and how one update is applied:
//! shared by the run-time kernel and the compile-time plan.

use irun_tensor::fmt_shape;

use super::strategy::Tuning;
use crate::kernel::{count_from_end, Part};
use crate::op::{codes, OpError};
use crate::product;
use crate::reduce::{Combine, Elem};

/// Data and indices viewed as `[outer, axis, inner]`. Indices may be smaller than data off the
/// axis (never larger: checked), so their outer and inner positions map into data's through
/// `outer_map`/`inner_map` (`None` when the dims are equal and the map is the identity).
#[derive(Debug)]
pub(super) struct Geometry {
    pub(super) axis: usize,
    /// Outer (dims before the axis), axis and inner (dims after) sizes of the indices.
    pub(super) outer: usize,
    pub(super) along: usize,
    pub(super) inner: usize,
    /// Axis and inner sizes of the data.
    pub(super) data_along: usize,
    pub(super) data_inner: usize,
    pub(super) outer_map: Option<Vec<usize>>,
    pub(super) inner_map: Option<Vec<usize>>,
}

/// Which dim [`Geometry::task_split`] cuts into tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskSplit {
    Outer,
    Inner,
}

impl Geometry {
    pub(super) fn new(
        data: &[usize],
        indices: &[usize],
        updates: &[usize],
        axis: usize,
    ) -> Result<Geometry, OpError> {
        if indices != updates {
            return Err(OpError::input(
                2,
                codes::RUN_SHAPE,
                format!(
                    "Indices and updates input shapes are required to be equal. Got: {} and: {}",
                    fmt_shape(indices),
                    fmt_shape(updates)
                ),
            ));
        }
        let fits = indices.len() == data.len()
            && (0..data.len()).all(|i| i == axis || indices[i] <= data[i]);
        if !fits {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!(
                    "indices {} do not fit data {}: same rank, and no dim larger than data's except the axis ({axis})",
                    fmt_shape(indices),
                    fmt_shape(data)
                ),
            ));
        }
        Ok(Geometry {
            axis,
            outer: product(&indices[..axis]),
            along: indices[axis],
            inner: product(&indices[axis + 1..]),
            data_along: data[axis],
            data_inner: product(&data[axis + 1..]),
            outer_map: position_map(&indices[..axis], &data[..axis]),
            inner_map: position_map(&indices[axis + 1..], &data[axis + 1..]),
        })
    }

    /// The first output offset of outer row `o` of the indices.
    pub(super) fn row_base(&self, o: usize) -> usize {
        self.outer_map.as_ref().map_or(o, |m| m[o]) * self.data_along * self.data_inner
    }

    /// One outer row and one inner column with nothing mapped: the output offset of a
    /// position is its axis target (a histogram, a 1-D max).
    /// How [`Strategy::Tasks`] shares the work out among `threads`: by outer rows when there
    /// is one for each thread, else by inner columns when there are
    /// [`Tuning::MIN_COLUMNS_PER_TASK`] for each; `None` when neither gives every thread a
    /// share. The choice of a strategy asks the same ([`Workload::splits`]).
    ///
    /// [`Strategy::Tasks`]: super::strategy::Strategy::Tasks
    /// [`Workload::splits`]: super::strategy::Workload::splits
    pub(super) fn task_split(&self, threads: usize) -> Option<TaskSplit> {
        if self.outer >= threads {
            Some(TaskSplit::Outer)
        } else if self.inner >= Tuning::MIN_COLUMNS_PER_TASK * threads {
            Some(TaskSplit::Inner)
        } else {
            None
        }
    }

    pub(super) fn single_flat_row(&self) -> bool {
        self.outer == 1
            && self.inner == 1
            && self.data_inner == 1
            && self.outer_map.is_none()
            && self.inner_map.is_none()
    }

    /// Index value `v` with a negative value counted from the end of the axis; anything still
    /// outside `[0, data_along)` (below `-data_along` wraps to a huge value) is out of range.
    #[inline(always)]
    pub(super) fn target(&self, v: i64) -> usize {
        count_from_end(v, self.data_along as i64) as usize
    }
}

/// For each row-major position in `small`, the row-major position of the same coordinates in
/// `big` (every dim of `small` <= `big`'s); `None` when the shapes are equal.
fn position_map(small: &[usize], big: &[usize]) -> Option<Vec<usize>> {
    if small == big {
        return None;
    }
    let mut map = vec![0usize];
    for (&s, &b) in small.iter().zip(big) {
        map = map
            .iter()
            .flat_map(|&base| (0..s).map(move |c| base * b + c))
            .collect();
    }
    Some(map)
}

/// A position's outer, axis and inner coordinates in the indices, and the first output
/// offset of its outer row: what the loops that walk the indices in row-major order
/// ([`ElementsKernel::partition`](super::kernel::ElementsKernel::partition), the plan's build) step from one position to the next.
#[derive(Clone, Copy)]
pub(super) struct Coords {
    pub(super) outer: usize,
    pub(super) along: usize,
    pub(super) inner: usize,
    pub(super) base: usize,
}

impl Coords {
    /// The coordinates of row-major position `p` of the indices.
    pub(super) fn at(g: &Geometry, p: usize) -> Coords {
        let plane = (g.along * g.inner).max(1);
        let (outer, rem) = (p / plane, p % plane);
        Coords {
            outer,
            along: rem / g.inner.max(1),
            inner: rem % g.inner.max(1),
            base: g.row_base(outer),
        }
    }

    /// The output offset of axis target `t` (in range) at these coordinates.
    #[inline(always)]
    pub(super) fn offset(&self, g: &Geometry, t: usize) -> usize {
        self.base + t * g.data_inner + g.inner_map.as_ref().map_or(self.inner, |m| m[self.inner])
    }

    /// Steps to the next row-major position.
    #[inline(always)]
    pub(super) fn advance(&mut self, g: &Geometry) {
        self.inner += 1;
        if self.inner == g.inner {
            self.inner = 0;
            self.along += 1;
            if self.along == g.along {
                self.along = 0;
                self.outer += 1;
                if self.outer < g.outer {
                    self.base = g.row_base(self.outer);
                }
            }
        }
    }
}

/// Applies update `u` to output element `off`; with `TRACK`, counts the hit and gives the first
/// hit the neutral start value when `use_init_val` is false.
///
/// # Safety
/// No part of another task accesses element `off` of `out` or `counts` meanwhile.
#[inline(always)]
pub(super) unsafe fn hit<T: Elem, C: Combine<T>, const TRACK: bool>(
    out: &Part<T>,
    counts: &Part<u32>,
    init: bool,
    off: usize,
    u: T,
) {
    if !TRACK {
        // SAFETY: the caller's contract.
        unsafe { out.update(off, |acc| C::apply(acc, u)) };
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = out.get(off);
        if TRACK {
            let k = counts.get(off);
            if k == 0 && !init {
                acc = C::NEUTRAL;
            }
            counts.set(off, k + 1);
        }
        out.set(off, C::apply(acc, u));
    }
}
