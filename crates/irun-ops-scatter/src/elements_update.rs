//! ScatterElementsUpdate-3 and -12: `out[idx with idx[axis] = indices[idx]] (op)= updates[idx]`
//! for every position `idx` of indices/updates.
//!
//! Inputs: data (rank r), indices (rank r, integer), updates (indices' shape), axis (rank 0 or
//! 1, element 0 used). v12 adds `reduction` (none, sum, prod, min, max, mean; default none) and
//! `use_init_val` (default true). Output: data's shape, merged data/updates type.

use std::ops::Range;
use std::sync::Arc;

use irun_tensor::{fmt_shape, ElementType};

use super::elements_plan::{ElementsPlan, PreparedElementsUpdate, PLAN_MIN_INDICES};
use super::reduce::{dispatch, Combine, Elem, MinMaxRule, ReduceKernel};
use super::{
    axis_value, check_same_type, index_out_of_range, is_index_type, merge_data_updates,
    normalize_axis, product, runtime_axis, runtime_indices, Reduction,
};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{
    pieces, split_range, take_or_copy, try_zeroed, DisjointSlice, IndexValues, PAR_MIN_ELEMENTS,
};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Prepared, Value};
use crate::par;

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterElementsUpdate {
    /// 3 or 12.
    pub version: u32,
    pub reduction: Reduction,
    pub use_init_val: bool,
}

pub fn build_v3(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ScatterElementsUpdate {
        version: 3,
        reduction: Reduction::None,
        use_init_val: true,
    }))
}

pub fn build_v12(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let reduction = Reduction::parse(a.enum_or(
        "reduction",
        &["none", "sum", "prod", "min", "max", "mean"],
        "none",
    )?);
    let use_init_val = a.bool_or("use_init_val", true)?;
    Ok(Box::new(ScatterElementsUpdate {
        version: 12,
        reduction,
        use_init_val,
    }))
}

impl Op for ScatterElementsUpdate {
    fn name(&self) -> &'static str {
        if self.version == 3 {
            "ScatterElementsUpdate-3"
        } else {
            "ScatterElementsUpdate-12"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[3]
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_with(inputs, None)
    }

    /// With constant indices (and axis), the indices' offsets are computed and grouped by
    /// output bucket once ([`ElementsPlan`]); with constant updates too, the updates are stored
    /// in that order. Only for static data and enough indices to be worth the memory.
    fn prepare(&self, inputs: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let ([data_fact, indices_fact, updates_fact, _], [_, Some(indices), updates, Some(axis)]) =
            (inputs, constants)
        else {
            return None;
        };
        let (indices, axis, updates) = (indices.clone(), axis.clone(), updates.clone());
        let data_shape = data_fact.shape.to_static()?;
        if indices.len() < PLAN_MIN_INDICES
            || indices_fact.shape.to_static().as_deref() != Some(indices.shape())
            || updates_fact.shape.to_static().as_deref() != Some(indices.shape())
            || updates_fact.ty != data_fact.ty
        {
            return None;
        }
        let axis_index = runtime_axis(&axis, data_shape.len(), 3).ok()?;
        let g = Geometry::new(&data_shape, indices.shape(), indices.shape(), axis_index).ok()?;
        let elem_bytes = data_fact.ty.bit_width().div_ceil(8).max(1) as usize;
        let plan = ElementsPlan::build(
            &g,
            &indices,
            updates.as_deref(),
            product(&data_shape),
            elem_bytes,
            par::threads(),
        )?;
        let updates = plan.sorted_updates.is_some().then_some(updates).flatten();
        Some(Box::new(PreparedElementsUpdate {
            op: self.clone(),
            plan,
            data_shape,
            indices,
            axis,
            updates,
        }))
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 4, self.name())?;
        let (data, indices, updates, axis) = (&inputs[0], &inputs[1], &inputs[2], &inputs[3]);
        // Stricter than OpenVINO, whose is_integral() also admits boolean/u1/nf4/string indices.
        if !is_index_type(indices.ty) {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "Indices element type must be an integer type, but is: {}",
                    indices.ty
                ),
            ));
        }
        if !axis.ty.is_integral() || !is_index_type(axis.ty) {
            return Err(OpError::input(
                3,
                codes::ELEMENT_TYPE,
                format!(
                    "Axis element type must be an integer type, but is: {}",
                    axis.ty
                ),
            ));
        }
        let ty = merge_data_updates(
            data,
            updates,
            2,
            "Data type and updates type are required to be the same",
        )?;
        if self.reduction == Reduction::Mean && ty == ElementType::Boolean {
            return Err(OpError::attribute(
                "reduction",
                "The 'mean' reduction type is not supported for boolean tensors",
            ));
        }
        if axis.rank().is_some_and(|r| r > 1) {
            return Err(OpError::input(
                3,
                codes::RANK,
                format!(
                    "Axis input shape are required to be scalar or 1D tensor. Got: {}",
                    axis.shape
                ),
            ));
        }
        if let (Some(r), Some(q)) = (data.rank(), indices.rank()) {
            if r != q {
                return Err(OpError::input(
                    1,
                    codes::RANK,
                    format!(
                        "Indices rank and data rank are required to be equal. Got: {q} and: {r}"
                    ),
                ));
            }
        }
        if !indices.shape.compatible(&updates.shape) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!(
                    "Indices and updates input shapes are required to be equal. Got: {} and: {}",
                    indices.shape, updates.shape
                ),
            ));
        }
        let out = Fact::new(ty, data.shape.clone());
        let (Some(r), Some(a)) = (data.rank(), axis_value(axis)) else {
            return Ok(vec![out]);
        };
        let a = normalize_axis(a, r, 3)?;
        // Stricter than OpenVINO: an indices dim larger than data's outside the axis makes
        // OpenVINO write out of bounds; irun rejects it.
        if let (Some(dd), Some(id)) = (data.shape.dims(), indices.shape.dims()) {
            for (i, (d, x)) in dd.iter().zip(id).enumerate() {
                if i != a && d.max().is_some_and(|dmax| x.min() > dmax) {
                    return Err(OpError::input(
                        1,
                        codes::SHAPE,
                        format!(
                            "indices dim {i} ({x}) is larger than data dim {i} ({d}); only the axis dim ({a}) may be larger. Got indices {} for data {}",
                            indices.shape, data.shape
                        ),
                    ));
                }
            }
        }
        Ok(vec![out])
    }
}

impl ScatterElementsUpdate {
    /// The op's kernel; with `plan`, the indices' work done at compile time (the caller has
    /// checked that the plan was made for these indices, axis and data shape, and that
    /// `sorted_updates`, if any, are these updates in plan order).
    pub(super) fn eval_with(
        &self,
        inputs: Vec<Value>,
        plan: Option<&ElementsPlan>,
    ) -> Result<Vec<Value>, OpError> {
        let [data, indices, updates, axis] = take_inputs::<4>(inputs, self.name())?;
        check_same_type(&data, &updates)?;
        let axis = runtime_axis(&axis, data.shape().len(), 3)?;
        let geometry = Geometry::new(data.shape(), indices.shape(), updates.shape(), axis)?;
        let kernel = ElementsKernel {
            indices: runtime_indices(&indices)?,
            indices_shape: indices.shape(),
            geometry,
            mean: self.reduction == Reduction::Mean,
            use_init_val: self.use_init_val,
            plan,
            track_counts: self.reduction == Reduction::Mean
                || (!self.use_init_val && self.reduction != Reduction::None),
        };
        let mut out = take_or_copy(data);
        if !kernel.indices.is_empty() {
            let updates = plan
                .and_then(|p| p.sorted_updates.as_ref())
                .unwrap_or(&updates);
            dispatch(
                &kernel,
                &mut out,
                updates,
                self.reduction,
                MinMaxRule::Elements,
            )?;
        }
        Ok(vec![Arc::new(out)])
    }
}

/// Data and indices viewed as `[outer, axis, inner]`. Indices may be smaller than data off the
/// axis (never larger: checked), so their outer and inner positions map into data's through
/// `outer_map`/`inner_map` (`None` when the dims are equal and the map is the identity).
pub(super) struct Geometry {
    axis: usize,
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
    fn row_base(&self, o: usize) -> usize {
        self.outer_map.as_ref().map_or(o, |m| m[o]) * self.data_along * self.data_inner
    }

    /// Index value `v` with a negative value counted from the end of the axis; anything still
    /// outside `[0, data_along)` (below `-data_along` wraps to a huge value) is out of range.
    #[inline(always)]
    pub(super) fn target(&self, v: i64) -> usize {
        (v + ((v >> 63) & self.data_along as i64)) as usize
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

/// The part of the work one task does: outer and inner positions of the indices, and the axis
/// (each task owns the output elements of its rows and columns).
struct Task {
    outer: Range<usize>,
    inner: Range<usize>,
}

struct ElementsKernel<'a> {
    indices: IndexValues<'a>,
    indices_shape: &'a [usize],
    geometry: Geometry,
    mean: bool,
    use_init_val: bool,
    /// Per-element hit counts are needed for mean and for `use_init_val=false`.
    track_counts: bool,
    /// The indices' work done at compile time, if they are constant.
    plan: Option<&'a ElementsPlan>,
}

impl ElementsKernel<'_> {
    /// Splits the work so that no two tasks can write the same output element, and each
    /// element sees its updates in row-major order: by outer rows of the output, else by
    /// inner columns; shapes that neither split serves run bucketed (`run_bucketed`) or, when
    /// small, on one task.
    fn tasks(&self) -> Vec<Task> {
        let g = &self.geometry;
        let full = || Task {
            outer: 0..g.outer,
            inner: 0..g.inner,
        };
        let n = self.indices.len();
        let threads = par::threads();
        if n < PAR_MIN_ELEMENTS || threads == 1 {
            return vec![full()];
        }
        if g.outer >= threads {
            let k = pieces(g.outer, 1);
            return split_range(g.outer, k)
                .into_iter()
                .map(|outer| Task { outer, ..full() })
                .collect();
        }
        if g.inner >= 64 * threads {
            let k = pieces(g.inner, 64);
            return split_range(g.inner, k)
                .into_iter()
                .map(|inner| Task { inner, ..full() })
                .collect();
        }
        vec![full()]
    }

    /// Whether to run bucketed ([`ElementsKernel::run_bucketed`]): large work that the row
    /// and column splits cannot share out (1-D-like shapes: histograms, 1-D max), with an
    /// output small enough for 32-bit offsets and not empty (every index of an empty axis is
    /// out of range, which the other paths report).
    fn bucketed(&self, out_len: usize) -> bool {
        let g = &self.geometry;
        let threads = par::threads();
        threads > 1
            && self.indices.len() >= BUCKETED_MIN_INDICES
            && g.data_along > 0
            && g.outer < threads
            && g.inner < 64 * threads
            && out_len <= u32::MAX as usize
    }

    /// For 1-D-like shapes, in rounds of [`ROUND_POSITIONS`] positions, in order. Pass 1 (in
    /// parallel over one contiguous part of the round per thread) validates every index and
    /// appends `(output offset, update)` to the part's list for the target bucket, a range of
    /// axis positions. Pass 2 (in parallel over buckets) applies each bucket's lists in part
    /// order. So each output element sees its updates in row-major order. The lists are
    /// reused from round to round: they stay in cache and are faulted in once.
    fn run_bucketed<T: Elem, C: Combine<T>, const TRACK: bool>(
        &self,
        out: &DisjointSlice<T>,
        counts: &DisjointSlice<u32>,
        updates: &[T],
    ) -> Result<(), OpError> {
        let g = &self.geometry;
        let threads = par::threads();
        let out_bytes = out.len().saturating_mul(std::mem::size_of::<T>());
        let shift = bucket_shift(g.data_along, out_bytes, threads);
        let buckets = ((g.data_along - 1) >> shift) + 1;
        let mut parts: Vec<PartLists<T>> = (0..threads).map(|_| PartLists::new(buckets)).collect();
        let n = self.indices.len();
        let init = self.use_init_val;
        // Rounds keep the lists in cache when the output stays there too; a larger output
        // would be streamed in again by every round, so it runs in one.
        let round_len = if out_bytes <= ROUNDS_MAX_OUTPUT_BYTES {
            ROUND_POSITIONS
        } else {
            n
        };
        for round in (0..n).step_by(round_len) {
            let len = round_len.min(n - round);
            let ranges = split_range(len, threads);
            // Every part is refilled, those without a range (a round shorter than the thread
            // count) with nothing: their lists from the last round must not be applied again.
            par::try_for_each_mut(&mut parts, &|i, lists| {
                let r = ranges.get(i).cloned().unwrap_or(len..len);
                self.partition(round + r.start..round + r.end, shift, lists, updates)
            })?;
            let parts = &parts;
            par::for_each_task(buckets, &|b| {
                for part in parts {
                    for &(off, u) in part.bucket(b) {
                        // SAFETY: bucket `b` of every part holds only offsets whose axis target
                        // is in bucket `b`'s range, and each bucket is applied by one task, so
                        // no element is touched by two tasks.
                        unsafe { hit::<T, C, TRACK>(out, counts, init, off as usize, u) };
                    }
                }
            });
        }
        Ok(())
    }

    /// Pass 1 of [`ElementsKernel::run_bucketed`] over positions `part`: validates each
    /// index and refills `lists` with the `(offset, update)` of each position, in bucket
    /// `t >> shift` of its axis target `t`, in row-major order.
    fn partition<T: Elem>(
        &self,
        part: Range<usize>,
        shift: u32,
        lists: &mut PartLists<T>,
        updates: &[T],
    ) -> Result<(), (usize, OpError)> {
        let g = &self.geometry;
        let mut next = Coords::at(g, part.start);
        // When the output offset is the axis target (histograms), the loop skips the
        // coordinate bookkeeping.
        let flat = g.outer == 1 && g.inner == 1 && g.outer_map.is_none() && g.inner_map.is_none();
        lists.used.fill(0);
        self.indices.for_each_block(part, |start, vals| {
            let ups = &updates[start..start + vals.len()];
            lists.make_room(vals.len()).map_err(|e| (start, e))?;
            let (vecs, used) = (&mut lists.lists, &mut lists.used);
            let fill = if let ([low, high], [l, h]) = (&mut vecs[..], &mut used[..]) {
                let mut two = TwoLists {
                    low,
                    high,
                    cursors: (*l, *h),
                };
                let r = self.fill(flat, &mut two, shift, vals, ups, &mut next);
                (*l, *h) = two.cursors;
                r
            } else {
                let mut many = ManyLists::new(vecs, used);
                let r = self.fill(flat, &mut many, shift, vals, ups, &mut next);
                many.finish();
                r
            };
            fill.map_err(|k| (start + k, self.out_of_range(start + k, vals[k])))
        })
    }

    /// The loop of [`ElementsKernel::partition`] over one block of indices (the first
    /// one's coordinates are `next`): puts each position's pair; stops at the first index out
    /// of range and returns its place in the block. `flat`: the output offset is the axis
    /// target.
    #[inline(always)]
    fn fill<T: Elem, W: Put<T>>(
        &self,
        flat: bool,
        lists: &mut W,
        shift: u32,
        vals: &[i64],
        ups: &[T],
        next: &mut Coords,
    ) -> Result<(), usize> {
        // Monomorphised on `flat`, so that the histogram loop carries no coordinates.
        if flat {
            self.fill_with::<T, W, true>(lists, shift, vals, ups, next)
        } else {
            self.fill_with::<T, W, false>(lists, shift, vals, ups, next)
        }
    }

    #[inline(always)]
    fn fill_with<T: Elem, W: Put<T>, const FLAT: bool>(
        &self,
        lists: &mut W,
        shift: u32,
        vals: &[i64],
        ups: &[T],
        next: &mut Coords,
    ) -> Result<(), usize> {
        let g = &self.geometry;
        // A local copy, so that the coordinates live in registers inside the loop.
        let mut at = *next;
        for (k, (&v, &u)) in vals.iter().zip(ups).enumerate() {
            let t = g.target(v);
            if t >= g.data_along {
                return Err(k);
            }
            if FLAT {
                lists.put(t >> shift, t as u32, u);
                continue;
            }
            lists.put(t >> shift, at.offset(g, t) as u32, u);
            at.advance(g);
        }
        *next = at;
        Ok(())
    }

    /// One task, one element per index along the axis (`inner == 1`), no counts: the
    /// plainest loop, on a plain slice. Index-bound checks double as the validation.
    fn run_flat<T: Elem, C: Combine<T>>(
        &self,
        out: &mut [T],
        updates: &[T],
    ) -> Result<(), OpError> {
        let g = &self.geometry;
        for o in 0..g.outer {
            let dst = &mut out[o * g.data_along..(o + 1) * g.data_along];
            let row = o * g.along;
            self.indices
                .for_each_block(row..row + g.along, |start, vals| {
                    let ups = &updates[start..start + vals.len()];
                    for (k, (&v, &u)) in vals.iter().zip(ups).enumerate() {
                        let Some(d) = dst.get_mut(g.target(v)) else {
                            return Err(self.out_of_range(start + k, v));
                        };
                        *d = C::apply(*d, u);
                    }
                    Ok(())
                })?;
        }
        Ok(())
    }

    fn run_task<T: Elem, C: Combine<T>>(
        &self,
        task: &Task,
        out: &DisjointSlice<T>,
        counts: &DisjointSlice<u32>,
        updates: &[T],
    ) -> Result<(), (usize, OpError)> {
        // Monomorphised on counting, so the common path has no per-element count test.
        if self.track_counts {
            self.run_task_with::<T, C, true>(task, out, counts, updates)
        } else {
            self.run_task_with::<T, C, false>(task, out, counts, updates)
        }
    }

    fn run_task_with<T: Elem, C: Combine<T>, const TRACK: bool>(
        &self,
        task: &Task,
        out: &DisjointSlice<T>,
        counts: &DisjointSlice<u32>,
        updates: &[T],
    ) -> Result<(), (usize, OpError)> {
        let g = &self.geometry;
        let init = self.use_init_val;
        let full_inner = task.inner == (0..g.inner);
        for o in task.outer.clone() {
            let base = g.row_base(o);
            let row = o * g.along * g.inner;
            let lines: Vec<Range<usize>> = if full_inner {
                // The whole [along, inner] plane of this outer row is contiguous.
                std::iter::once(row..row + g.along * g.inner).collect()
            } else {
                (0..g.along)
                    .map(|a| {
                        row + a * g.inner + task.inner.start..row + a * g.inner + task.inner.end
                    })
                    .collect()
            };
            let (inner_lo, inner_len) = (task.inner.start, task.inner.len());
            let inner_at = |i: usize| g.inner_map.as_ref().map_or(i, |m| m[i]);
            for line in lines {
                let line_start = line.start;
                self.indices.for_each_block(line, |start, vals| {
                    let upd = &updates[start..start + vals.len()];
                    // The inner coordinate of the block's first element; then counted.
                    let mut i = inner_lo + (start - line_start) % inner_len;
                    for (k, (&v, &u)) in vals.iter().zip(upd).enumerate() {
                        let t = g.target(v);
                        if t >= g.data_along {
                            return Err((start + k, self.out_of_range(start + k, v)));
                        }
                        let off = base + t * g.data_inner + inner_at(i);
                        // SAFETY: `tasks` gives each task a disjoint set of output elements
                        // (disjoint outer rows or inner columns; the position maps are
                        // injective), and `off` has this task's outer row and column.
                        unsafe { hit::<T, C, TRACK>(out, counts, init, off, u) };
                        i += 1;
                        if i == inner_lo + inner_len {
                            i = inner_lo;
                        }
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    fn out_of_range(&self, pos: usize, v: i64) -> OpError {
        let d = self.geometry.data_along;
        index_out_of_range(
            self.indices_shape,
            pos,
            v,
            &format!("[{}, {}]", -(d as i64), d as i64 - 1),
            &format!("axis {} of size {d}", self.geometry.axis),
        )
    }
}

/// The work lists one part of a round of [`ElementsKernel::run_bucketed`] fills: per bucket,
/// the `(output offset, update)` pairs of the part's positions that target the bucket, in
/// row-major order. The vectors only grow, and `used` says how much of each is this round's,
/// so refilling them costs no allocation and no initialisation after the first rounds.
struct PartLists<T> {
    lists: Vec<Vec<(u32, T)>>,
    used: Vec<usize>,
}

impl<T: Elem> PartLists<T> {
    fn new(buckets: usize) -> PartLists<T> {
        PartLists {
            lists: (0..buckets).map(|_| Vec::new()).collect(),
            used: vec![0; buckets],
        }
    }

    fn bucket(&self, b: usize) -> &[(u32, T)] {
        &self.lists[b][..self.used[b]]
    }

    /// Room for `n` more pairs in every bucket, plus the one slot past the end that
    /// [`TwoLists`] writes in the bucket it does not fill.
    fn make_room(&mut self, n: usize) -> Result<(), OpError> {
        for (list, &used) in self.lists.iter_mut().zip(&self.used) {
            if list.len() < used + n + 1 {
                let len = (used + n + 1).max(2 * list.len());
                list.try_reserve(len - list.len()).map_err(|_| {
                    OpError::new(codes::MEMORY, "cannot allocate scatter work lists")
                })?;
                list.resize(len, (0, T::ZERO));
            }
        }
        Ok(())
    }
}

/// A position's outer, axis and inner coordinates in the indices, and the first output
/// offset of its outer row: what the loops that walk the indices in row-major order
/// ([`ElementsKernel::partition`], the plan's build) step from one position to the next.
#[derive(Clone, Copy)]
pub(super) struct Coords {
    outer: usize,
    along: usize,
    inner: usize,
    base: usize,
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

/// Appends `(offset, update)` to a bucket's list, within the room [`PartLists::make_room`] made.
trait Put<T> {
    fn put(&mut self, bucket: usize, off: u32, u: T);
}

/// The writer for two buckets: writes each pair to both lists and advances one cursor, which
/// leaves no branch to mispredict on random targets. Small enough for its cursors to live in
/// registers.
struct TwoLists<'a, T> {
    low: &'a mut [(u32, T)],
    high: &'a mut [(u32, T)],
    cursors: (usize, usize),
}

impl<T: Copy> Put<T> for TwoLists<'_, T> {
    #[inline(always)]
    fn put(&mut self, bucket: usize, off: u32, u: T) {
        let (l, h) = self.cursors;
        self.low[l] = (off, u);
        self.high[h] = (off, u);
        self.cursors = (l + 1 - bucket, h + bucket);
    }
}

/// The writer for any number of buckets, with the cursors in a local array.
struct ManyLists<'a, T> {
    lists: [&'a mut [(u32, T)]; MAX_BUCKETS],
    used: [usize; MAX_BUCKETS],
    /// Where [`ManyLists::finish`] leaves the cursors.
    counts: &'a mut [usize],
}

impl<'a, T> ManyLists<'a, T> {
    fn new(vecs: &'a mut [Vec<(u32, T)>], counts: &'a mut [usize]) -> ManyLists<'a, T> {
        let mut lists: [&mut [(u32, T)]; MAX_BUCKETS] = std::array::from_fn(|_| &mut [][..]);
        for (slot, list) in lists.iter_mut().zip(vecs) {
            *slot = list.as_mut_slice();
        }
        let mut used = [0; MAX_BUCKETS];
        used[..counts.len()].copy_from_slice(counts);
        ManyLists {
            lists,
            used,
            counts,
        }
    }

    fn finish(self) {
        let n = self.counts.len();
        self.counts.copy_from_slice(&self.used[..n]);
    }
}

impl<T: Copy> Put<T> for ManyLists<'_, T> {
    #[inline(always)]
    fn put(&mut self, bucket: usize, off: u32, u: T) {
        self.lists[bucket][self.used[bucket]] = (off, u);
        self.used[bucket] += 1;
    }
}

/// Fewer indices than this run in one lean pass rather than bucketed.
const BUCKETED_MIN_INDICES: usize = 1 << 18;

/// Positions per round of [`ElementsKernel::run_bucketed`]: its lists (8 MiB for 4-byte
/// updates) and the round's indices and updates stay in a 32 MiB L3. (Measured on a 2-core
/// EPYC: 2^20 is best for a 4 MiB histogram; 2^19 is 2.5x slower.)
const ROUND_POSITIONS: usize = 1 << 20;

/// Outputs larger than this run [`ElementsKernel::run_bucketed`] in one round (measured:
/// a 32 MiB i32 max runs in 31 ms in one round, 43 ms in rounds of 2^20).
const ROUNDS_MAX_OUTPUT_BYTES: usize = 16 << 20;

/// The most target buckets of [`ElementsKernel::run_bucketed`].
const MAX_BUCKETS: usize = 64;

/// Output bytes per bucket that keep pass 2's read-modify-writes in cache.
const BUCKET_BYTES: usize = 4 << 20;

/// Buckets of `1 << shift` axis targets: one per thread at least, more when the output is
/// larger than [`BUCKET_BYTES`] per bucket (measured on a 2-core EPYC, 1 MiB L2 per core and
/// 32 MiB L3: a 4 MiB f32 histogram runs fastest in two buckets, a 32 MiB one in eight), and
/// at most [`MAX_BUCKETS`].
fn bucket_shift(targets: usize, out_bytes: usize, threads: usize) -> u32 {
    let wanted = threads
        .max(out_bytes.div_ceil(BUCKET_BYTES))
        .min(MAX_BUCKETS);
    let mut shift = targets.div_ceil(wanted).next_power_of_two().ilog2();
    while ((targets.max(1) - 1) >> shift) + 1 > MAX_BUCKETS {
        shift += 1;
    }
    shift
}

/// Applies update `u` to output element `off`; with `TRACK`, counts the hit and gives the first
/// hit the neutral start value when `use_init_val` is false.
///
/// # Safety
/// No other thread accesses element `off` of `out` or `counts` meanwhile.
#[inline(always)]
pub(super) unsafe fn hit<T: Elem, C: Combine<T>, const TRACK: bool>(
    out: &DisjointSlice<T>,
    counts: &DisjointSlice<u32>,
    init: bool,
    off: usize,
    u: T,
) {
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

impl ReduceKernel for ElementsKernel<'_> {
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        if self.track_counts && self.indices.len() > u32::MAX as usize {
            return Err(OpError::new(
                codes::MEMORY,
                "more than 2^32 indices with counted reductions",
            ));
        }
        let mut counts: Vec<u32> = if self.track_counts {
            try_zeroed(out.len())?
        } else {
            Vec::new()
        };
        let g = &self.geometry;
        let flat = g.inner == 1 && g.data_inner == 1 && g.outer_map.is_none() && !self.track_counts;
        let bucketed = self.bucketed(out.len());
        if flat && !bucketed && self.plan.is_none() {
            return self.run_flat::<T, C>(out, updates);
        }
        {
            let o = DisjointSlice::new(out);
            let c = DisjointSlice::new(&mut counts);
            let init = self.use_init_val;
            if let Some(plan) = self.plan {
                if self.track_counts {
                    plan.apply::<T, C, true>(&o, &c, init, updates);
                } else {
                    plan.apply::<T, C, false>(&o, &c, init, updates);
                }
            } else if bucketed {
                if self.track_counts {
                    self.run_bucketed::<T, C, true>(&o, &c, updates)?;
                } else {
                    self.run_bucketed::<T, C, false>(&o, &c, updates)?;
                }
            } else {
                let tasks = self.tasks();
                par::try_for_each_task(tasks.len(), &|i| {
                    self.run_task::<T, C>(&tasks[i], &o, &c, updates)
                })?;
            }
        }
        if self.mean {
            let extra = u64::from(self.use_init_val);
            par::for_each_split_mut(out, PAR_MIN_ELEMENTS, &|start, xs| {
                for (x, &k) in xs.iter_mut().zip(&counts[start..]) {
                    if k > 0 {
                        *x = x.div_count(u64::from(k) + extra);
                    }
                }
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{err, fact, infer1, scalar_i64};
    use irun_tensor::ElementType::*;
    use irun_tensor::Tensor;

    fn v3() -> ScatterElementsUpdate {
        ScatterElementsUpdate {
            version: 3,
            reduction: Reduction::None,
            use_init_val: true,
        }
    }

    fn v12(reduction: Reduction) -> ScatterElementsUpdate {
        ScatterElementsUpdate {
            version: 12,
            reduction,
            use_init_val: true,
        }
    }

    fn both() -> [ScatterElementsUpdate; 2] {
        [v3(), v12(Reduction::Sum)]
    }

    fn seu(
        op: &ScatterElementsUpdate,
        ty: ElementType,
        data: &str,
        idx: &str,
        upd: &str,
        axis: Fact,
    ) -> Result<Fact, OpError> {
        infer1(op, &[fact(ty, data), fact(I16, idx), fact(ty, upd), axis])
    }

    /// type_prop scatter_elements_update_output_shape / _output_partial_dyn_shape /
    /// _data_has_interval_dimensions / _output_full_dyn_shape / _default_ctor.
    #[test]
    fn valid_cases_infer_data_shape() {
        for op in both() {
            assert_eq!(
                seu(&op, F32, "2,4,5,7", "2,2,2,2", "2,2,2,2", fact(I16, ""))
                    .unwrap()
                    .shape
                    .to_string(),
                "[2,4,5,7]"
            );
            assert_eq!(
                seu(&op, F64, "2,?,5", "?,2,2", "2,2,?", fact(I16, "..."))
                    .unwrap()
                    .shape
                    .to_string(),
                "[2,?,5]"
            );
            let out = seu(
                &op,
                I64,
                "5..10,?,..3,8..",
                "1,2,2,2..3",
                "0..2,?,2,?",
                scalar_i64(0),
            )
            .unwrap();
            assert_eq!(
                (out.ty, out.shape.to_string()),
                (I64, "[5..10,?,..3,8..]".into())
            );
            let out = infer1(
                &op,
                &[
                    fact(Dynamic, "..."),
                    fact(Dynamic, "..."),
                    fact(Dynamic, "..."),
                    fact(Dynamic, "..."),
                ],
            )
            .unwrap();
            assert_eq!(out.shape.to_string(), "[...]");
            assert_eq!(
                seu(&op, F32, "2,5,5,6", "1,2,1,3", "1,2,1,3", scalar_i64(-4))
                    .unwrap()
                    .shape
                    .to_string(),
                "[2,5,5,6]"
            );
        }
    }

    /// type_prop _axis_validation, scatter_elements_updates_indices_shape / _indices_rank /
    /// scatter_elements_data_indices_rank.
    #[test]
    fn invalid_shapes() {
        for op in both() {
            let e = err(seu(
                &op,
                F32,
                "2,4,5,7",
                "2,2,2,2",
                "2,2,2,2",
                scalar_i64(8),
            ));
            assert_eq!(e.message, "Axis 8 out of the tensor rank range [-4, 3]");
            let e = err(seu(
                &op,
                F32,
                "4,4,4,4",
                "3,3,3,3",
                "2,2,2,2",
                fact(I16, ""),
            ));
            assert!(
                e.message
                    .contains("Indices and updates input shapes are required to be equal"),
                "{}",
                e.message
            );
            let e = err(seu(&op, F32, "2,4", "2,2", "2,2,2,2", fact(I16, "")));
            assert!(e
                .message
                .contains("Indices and updates input shapes are required to be equal"));
            let e = err(seu(&op, F32, "2,4,5,7", "2,2", "2,2", fact(I16, "")));
            assert!(e
                .message
                .contains("Indices rank and data rank are required to be equal"));
            let e = err(seu(&op, F32, "2,3", "2,3", "2,3", fact(I16, "1,1")));
            assert!(e
                .message
                .contains("Axis input shape are required to be scalar or 1D tensor. Got: [1,1]"));
            // OpenVINO accepts an axis of shape [k] and uses element 0.
            assert!(seu(&op, F32, "2,3", "2,3", "2,3", fact(I16, "5")).is_ok());
        }
    }

    #[test]
    fn element_types() {
        let op = v3();
        let e = err(infer1(
            &op,
            &[
                fact(F32, "2"),
                fact(F32, "2"),
                fact(F32, "2"),
                scalar_i64(0),
            ],
        ));
        assert!(e
            .message
            .contains("Indices element type must be an integer type, but is: f32"));
        let e = err(infer1(
            &op,
            &[
                fact(F32, "2"),
                fact(I32, "2"),
                fact(F32, "2"),
                fact(F32, ""),
            ],
        ));
        assert!(e
            .message
            .contains("Axis element type must be an integer type, but is: f32"));
        let e = err(infer1(
            &op,
            &[
                fact(F32, "2"),
                fact(I32, "2"),
                fact(F16, "2"),
                scalar_i64(0),
            ],
        ));
        assert!(
            e.message
                .contains("Data type and updates type are required to be the same"),
            "{}",
            e.message
        );
        let out = infer1(
            &op,
            &[
                fact(Dynamic, "2"),
                fact(I32, "2"),
                fact(F16, "2"),
                scalar_i64(0),
            ],
        )
        .unwrap();
        assert_eq!(out.ty, F16, "dynamic data takes the updates type");
    }

    /// Stricter than OpenVINO: boolean indices (OpenVINO validates them) are rejected.
    #[test]
    fn boolean_indices_are_rejected() {
        let e = err(infer1(
            &v3(),
            &[
                fact(F32, "2"),
                fact(Boolean, "2"),
                fact(F32, "2"),
                scalar_i64(0),
            ],
        ));
        assert_eq!(
            (e.code, e.port),
            (
                codes::ELEMENT_TYPE,
                Some((irun_ir::PortDirection::Input, 1))
            )
        );
    }

    /// Stricter than OpenVINO: indices [5,7] for data [2,3] (axis 0) write out of bounds there.
    #[test]
    fn indices_larger_than_data_off_the_axis_are_rejected() {
        let e = err(seu(&v3(), F32, "2,3", "5,7", "5,7", scalar_i64(0)));
        assert!(
            e.message
                .contains("indices dim 1 (7) is larger than data dim 1 (3)"),
            "{}",
            e.message
        );
        // Larger along the axis is fine (duplicates), reference test case 5.
        assert!(seu(
            &v12(Reduction::Sum),
            F32,
            "2,2,1",
            "1,5,1",
            "1,5,1",
            scalar_i64(1)
        )
        .is_ok());
    }

    /// type_prop scatter_elements_update_mean_reduction_of_bool (v12 only).
    #[test]
    fn mean_of_boolean_is_invalid() {
        let e = err(infer1(
            &v12(Reduction::Mean),
            &[
                fact(Boolean, "10"),
                fact(I32, "2"),
                fact(Boolean, "2"),
                scalar_i64(0),
            ],
        ));
        assert_eq!(
            e.message,
            "The 'mean' reduction type is not supported for boolean tensors"
        );
        assert!(infer1(
            &v12(Reduction::Sum),
            &[
                fact(Boolean, "10"),
                fact(I32, "2"),
                fact(Boolean, "2"),
                scalar_i64(0)
            ]
        )
        .is_ok());
    }

    mod eval {
        use super::*;
        use crate::testing::{eval1, eval_with, f32s, i32s, i64s};

        fn seu12(reduction: Reduction, use_init_val: bool) -> ScatterElementsUpdate {
            ScatterElementsUpdate {
                version: 12,
                reduction,
                use_init_val,
            }
        }

        fn run(op: &ScatterElementsUpdate, data: Tensor, idx: &[i64], upd: Tensor) -> Tensor {
            let n = idx.len();
            eval1(op, vec![data, i64s(&[n], idx), upd, i64s(&[], &[0])]).unwrap()
        }

        /// Spec examples 1 and 2 of ScatterElementsUpdate-12.
        #[test]
        fn spec_examples() {
            let out = run(
                &seu12(Reduction::Sum, true),
                i32s(&[4], &[2, 3, 4, 6]),
                &[1, 0, 0, -2, -1, 2],
                i32s(&[6], &[10, 20, 30, 40, 70, 60]),
            );
            assert_eq!(out.values::<i32>().unwrap(), &[52, 13, 104, 76]);
            let out = run(
                &seu12(Reduction::Sum, false),
                i32s(&[4], &[2, 3, 4, 6]),
                &[1, 0, 0, 2, 3, 2],
                i32s(&[6], &[10, 20, 30, 40, 70, 60]),
            );
            assert_eq!(out.values::<i32>().unwrap(), &[50, 10, 100, 70]);
        }

        /// Reference doc 2.2 verified values: every reduction with and without init values.
        #[test]
        fn every_reduction_on_f32() {
            use Reduction::*;
            let cases: [(Reduction, bool, [f32; 4]); 11] = [
                (None, true, [3.0, 4.0, 5.0, -1.0]),
                (Sum, true, [10.0, 9.0, 5.0, 4.0]),
                (Sum, false, [5.0, 4.0, 5.0, -1.0]),
                (Prod, true, [30.0, 20.0, 5.0, -5.0]),
                (Prod, false, [6.0, 4.0, 5.0, -1.0]),
                (Min, true, [2.0, 4.0, 5.0, -1.0]),
                (Min, false, [2.0, 4.0, 5.0, -1.0]),
                (Max, true, [5.0, 5.0, 5.0, 5.0]),
                (Max, false, [3.0, 4.0, 5.0, -1.0]),
                (Mean, true, [10.0 / 3.0, 4.5, 5.0, 2.0]),
                (Mean, false, [2.5, 4.0, 5.0, -1.0]),
            ];
            for (red, init, want) in cases {
                let out = run(
                    &seu12(red, init),
                    f32s(&[4], &[5.0; 4]),
                    &[0, 0, 1, 3],
                    f32s(&[4], &[2.0, 3.0, 4.0, -1.0]),
                );
                assert_eq!(out.values::<f32>().unwrap(), &want, "{red:?} {init}");
            }
        }

        #[test]
        fn integer_mean_floors() {
            let data = i32s(&[4], &[0, 0, 0, 10]);
            let upd = i32s(&[7], &[-1, -2, 1, 2, -5, -5, -6]);
            let idx = [0, 0, 1, 1, 2, 2, 2];
            let out = run(
                &seu12(Reduction::Mean, true),
                data.clone(),
                &idx,
                upd.clone(),
            );
            assert_eq!(out.values::<i32>().unwrap(), &[-1, 1, -4, 10]);
            let out = run(&seu12(Reduction::Mean, false), data, &idx, upd);
            assert_eq!(out.values::<i32>().unwrap(), &[-2, 1, -6, 10]);
        }

        #[test]
        fn boolean_sum_is_or_and_prod_is_and() {
            let b = |v: &[bool]| Tensor::from_bool(vec![v.len()], v.to_vec()).unwrap();
            let (t, f) = (true, false);
            let data = b(&[t, f, f, t]);
            let upd = b(&[f, t, f, t, f]);
            let idx = [0, 1, 1, 2, 3];
            let cases = [
                (Reduction::Sum, true, [t, t, t, t]),
                (Reduction::Sum, false, [f, t, t, f]),
                (Reduction::Prod, true, [f, f, f, f]),
                (Reduction::Prod, false, [f, f, t, f]),
            ];
            for (red, init, want) in cases {
                let out = run(&seu12(red, init), data.clone(), &idx, upd.clone());
                assert_eq!(out.values::<bool>().unwrap(), &want, "{red:?} {init}");
            }
        }

        #[test]
        fn nan_update_poisons_max_and_later_update_replaces_it() {
            let out = run(
                &seu12(Reduction::Max, true),
                f32s(&[2], &[1.0, f32::NAN]),
                &[0, 1, 0],
                f32s(&[3], &[f32::NAN, 5.0, 2.0]),
            );
            assert_eq!(out.values::<f32>().unwrap(), &[2.0, 5.0]);
        }

        /// f16 2048 plus eight 1.0 is 2056 when accumulated in f32 and rounded once (each step
        /// in f16 would stay at 2048).
        #[test]
        fn f16_accumulates_in_f32() {
            use half::f16;
            let data = Tensor::from_f16(vec![1], vec![f16::from_f32(2048.0)]).unwrap();
            let upd = Tensor::from_f16(vec![8], vec![f16::ONE; 8]).unwrap();
            let out = run(&seu12(Reduction::Sum, true), data, &[0; 8], upd);
            assert_eq!(out.values::<f16>().unwrap(), &[f16::from_f32(2056.0)]);
        }

        /// Indices longer than data along the axis, smaller elsewhere (op_reference case 5).
        #[test]
        fn axis_1_with_duplicates_and_smaller_indices() {
            let op = seu12(Reduction::Sum, false);
            let out = eval1(
                &op,
                vec![
                    i32s(&[2, 2, 1], &[1, 2, 3, 4]),
                    i64s(&[1, 5, 1], &[0, 0, 1, 1, 1]),
                    i32s(&[1, 5, 1], &[50, 51, 10, 20, 30]),
                    i64s(&[1], &[1]),
                ],
            )
            .unwrap();
            assert_eq!(out.values::<i32>().unwrap(), &[101, 60, 3, 4]);
        }

        #[test]
        fn out_of_range_index_names_position_and_value() {
            let op = seu12(Reduction::None, true);
            let e = eval1(
                &op,
                vec![
                    f32s(&[2, 2], &[0.0; 4]),
                    i64s(&[2, 2], &[0, 1, -3, 0]),
                    f32s(&[2, 2], &[0.0; 4]),
                    i64s(&[], &[0]),
                ],
            )
            .unwrap_err();
            assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
            assert_eq!(
                e.message,
                "index -3 at position [1,0] of input 1 (indices) is out of range [-2, 1] for axis 0 of size 2"
            );
        }

        /// Over BUCKETED_MIN_INDICES indices, 1-D-like scatters take the bucketed path at two
        /// threads and the lean or single-task paths at one: independent implementations that
        /// must agree bit for bit, and with a plain sequential loop. The shapes cover its
        /// branches: a flat histogram in two buckets and two rounds (the second partial), a
        /// flat one in six buckets and one round (output over ROUNDS_MAX_OUTPUT_BYTES), and
        /// [targets, 3] ones, whose offsets are not the targets, in two and in four buckets.
        #[test]
        fn bucketed_path_agrees_with_sequential() {
            let n = ROUND_POSITIONS + 4097;
            for (targets, inner) in [
                (3usize << 16, 1usize),
                (6 << 20, 1),
                (3 << 16, 3),
                (2 << 20, 3),
            ] {
                let len = n / inner * inner;
                let idx: Vec<i64> = (0..len as i64)
                    .map(|i| (i * 2_654_435_761) % targets as i64 - (targets / 2) as i64)
                    .collect();
                let upd: Vec<f32> = (0..len).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
                let (ishape, dshape) = if inner == 1 {
                    (vec![len], vec![targets])
                } else {
                    (vec![len / inner, inner], vec![targets, inner])
                };
                for red in [Reduction::Sum, Reduction::Max, Reduction::Mean] {
                    let out = eval1(
                        &seu12(red, false),
                        vec![
                            f32s(&dshape, &vec![1.0; targets * inner]),
                            i64s(&ishape, &idx),
                            f32s(&ishape, &upd),
                            i64s(&[], &[0]),
                        ],
                    )
                    .unwrap();
                    if red == Reduction::Sum {
                        let mut want = vec![1.0f32; targets * inner];
                        let mut seen = vec![false; targets * inner];
                        for (p, (&v, &u)) in idx.iter().zip(&upd).enumerate() {
                            let t = if v < 0 { v + targets as i64 } else { v } as usize;
                            let off = t * inner + p % inner;
                            if !seen[off] {
                                want[off] = 0.0;
                                seen[off] = true;
                            }
                            want[off] += u;
                        }
                        assert!(out.values::<f32>().unwrap() == want.as_slice());
                    }
                }
            }
        }

        /// A last round shorter than the thread count leaves some parts without positions:
        /// their lists from the round before must not be applied a second time. (Before the
        /// parallel driver refilled every part, the second thread's lists were applied twice.)
        #[test]
        fn bucketed_last_round_shorter_than_the_thread_count() {
            for extra in [1usize, 2] {
                let n = ROUND_POSITIONS + extra;
                let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 4096).collect();
                let mut want = vec![0.0f32; 4096];
                for &t in &idx {
                    want[t as usize] += 1.0;
                }
                for threads in [1, 2, 3] {
                    let out = eval_with(
                        &seu12(Reduction::Sum, true),
                        vec![
                            f32s(&[4096], &[0.0; 4096]),
                            i64s(&[n], &idx),
                            f32s(&[n], &vec![1.0; n]),
                            i64s(&[], &[0]),
                        ],
                        threads,
                    )
                    .unwrap();
                    assert!(
                        out.values::<f32>().unwrap() == want.as_slice(),
                        "{threads} threads"
                    );
                }
            }
        }

        /// Out-of-range indices in both parts of the second round: the error names the first.
        #[test]
        fn bucketed_path_reports_the_first_bad_index() {
            let n = ROUND_POSITIONS + BUCKETED_MIN_INDICES;
            let mut idx: Vec<i64> = (0..n as i64).map(|i| i % 1000).collect();
            idx[n - 7] = 5000;
            idx[ROUND_POSITIONS + 3] = -1001;
            let e = eval1(
                &seu12(Reduction::Sum, true),
                vec![
                    f32s(&[1000], &[0.0; 1000]),
                    i64s(&[n], &idx),
                    f32s(&[n], &vec![1.0; n]),
                    i64s(&[], &[0]),
                ],
            )
            .unwrap_err();
            assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
            assert_eq!(
                e.message,
                format!(
                    "index -1001 at position [{}] of input 1 (indices) is out of range [-1000, 999] for axis 0 of size 1000",
                    ROUND_POSITIONS + 3
                )
            );
        }

        /// Large enough for the parallel paths (outer rows, inner columns, target ranges);
        /// `eval1` compares one thread against two.
        #[test]
        fn parallel_splits_agree_with_one_thread() {
            let n = 1 << 16;
            let idx: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1000 - 500).collect();
            let upd: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 0.1).collect();
            for (shape, dshape, axis) in [
                (vec![n], vec![1000], 0i64),
                (vec![64, n / 64], vec![1000, n / 64], 0),
                (vec![n / 64, 64], vec![n / 64, 1000], 1),
            ] {
                for red in [
                    Reduction::Sum,
                    Reduction::Mean,
                    Reduction::None,
                    Reduction::Max,
                ] {
                    let op = seu12(red, false);
                    let dn: usize = dshape.iter().product();
                    eval1(
                        &op,
                        vec![
                            f32s(&dshape, &vec![1.5; dn]),
                            i64s(&shape, &idx),
                            f32s(&shape, &upd),
                            i64s(&[], &[axis]),
                        ],
                    )
                    .unwrap();
                }
            }
        }
    }
}
