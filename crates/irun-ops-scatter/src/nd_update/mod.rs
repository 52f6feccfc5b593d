//! ScatterNDUpdate-3 (written `opset4`) and -15: `indices` is an array of k-tuples addressing
//! elements (k = rank) or slices (k < rank) of `data`; each gets the matching slice of `updates`.
//!
//! Inputs: data (rank r >= 1), indices (rank q >= 1, i32/i64, last dim k <= r), updates of shape
//! `indices.shape[:-1] + data.shape[k:]`. v15 adds `reduction` (none, sum, sub, prod, min, max).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::par;
use irun_tensor::{fmt_shape, ElementType};

use super::reduce::{dispatch_from, Combine, Elem, MinMaxRule, ReduceKernel};
use super::{
    check_same_type, dims_compatible, fmt_dims, merge_data_updates, product, runtime_indices,
    Reduction,
};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::fill::{FillFrom, Span};
use std::ops::Range;

use crate::kernel::{pieces, take_or_copy, PAR_MIN_ELEMENTS};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Prepared, Value};

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
    )?)?;
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

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_with(inputs, None)
    }

    /// Constant indices: their offsets are worked out once, at the first run (torch's slice
    /// assignment lowers to a ScatterNDUpdate with one constant tuple per element of the
    /// data: 4M tuples in a PointPillars head, read and checked on every run before).
    fn prepare(&self, inputs: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let ([data_fact, ..], [_, Some(indices), ..]) = (inputs, constants) else {
            return None;
        };
        let data_shape = data_fact.shape.to_static()?;
        let q = indices.shape();
        let k = *q.last()?;
        if indices.len() < PREPARE_MIN_INDICES || data_shape.is_empty() || k > data_shape.len() {
            return None;
        }
        Some(Box::new(PreparedNd {
            op: self.clone(),
            data_shape,
            indices: indices.clone(),
            offsets: OnceLock::new(),
        }))
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        self.infer_impl(inputs)
    }
}

/// Fewer constant index tuples than this are worked out at each run.
const PREPARE_MIN_INDICES: usize = 1 << 12;

/// A ScatterNDUpdate whose constant indices' offsets are worked out once, at the first run
/// that gets those indices (by identity) and data of the shape they are checked against, and
/// kept for the runs after it. Not at load: for PointPillars' 4M-index slice assignment that
/// was 26 ms, nearly all of the model's load time.
#[derive(Debug)]
struct PreparedNd {
    op: ScatterNDUpdate,
    data_shape: Vec<usize>,
    indices: Value,
    /// `None` when the indices are out of range: every run then reports it, with the run's
    /// error.
    offsets: OnceLock<Option<Offsets>>,
}

/// The tuples' offsets, and whether their slices lie back to back in order (`offsets[j] ==
/// offsets[0] + j * slice`: torch's slice assignment over a whole tensor gives
/// `arange(n)`), which makes the scatter an elementwise pass over one stretch.
#[derive(Debug)]
struct Offsets {
    offsets: Vec<usize>,
    contiguous: bool,
}

impl Offsets {
    fn new(offsets: Vec<usize>, slice: usize) -> Offsets {
        let contiguous = offsets.first().is_some_and(|&first| {
            offsets
                .iter()
                .enumerate()
                .all(|(j, &o)| o == first + j * slice)
        });
        Offsets {
            offsets,
            contiguous,
        }
    }
}

impl Prepared for PreparedNd {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let covers = matches!(&inputs[..], [data, indices, _]
            if data.shape() == self.data_shape && Arc::ptr_eq(indices, &self.indices));
        let offsets = covers.then(|| {
            self.offsets.get_or_init(|| {
                let q = self.indices.shape();
                let k = *q.last()?;
                let values = runtime_indices(&self.indices).ok()?;
                let offsets = tuple_offsets(values, q, &self.data_shape, k).ok()?;
                Some(Offsets::new(offsets, product(&self.data_shape[k..])))
            })
        });
        self.op.eval_with(inputs, offsets.and_then(|o| o.as_ref()))
    }

    /// What the offsets will hold: the budget counts them before the first run makes them.
    fn byte_size(&self) -> usize {
        let q = self.indices.shape();
        product(&q[..q.len().saturating_sub(1)]) * std::mem::size_of::<usize>()
    }
}

impl ScatterNDUpdate {
    /// The run, with the indices' offsets when they were worked out at load.
    fn eval_with(
        &self,
        inputs: Vec<Value>,
        prepared: Option<&Offsets>,
    ) -> Result<Vec<Value>, OpError> {
        let [data, indices, updates] = take_inputs::<3>(inputs, self.name())?;
        check_same_type(&data, &updates)?;
        let (d, q) = (data.shape(), indices.shape());
        let k = *q.last().ok_or_else(|| {
            OpError::input(
                1,
                codes::RUN_SHAPE,
                "Indices rank and inputs_rank are expected to be at least 1",
            )
        })?;
        if d.is_empty() || k > d.len() {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!(
                    "the last dimension of indices ({k}) can be at most the rank of data {}",
                    fmt_shape(d)
                ),
            ));
        }
        let expected: Vec<usize> = q[..q.len() - 1].iter().chain(&d[k..]).copied().collect();
        // Stricter than OpenVINO: when a 0-D update is expected, only a 0-D or one-element
        // updates tensor is accepted (OpenVINO validates any shape and reads the first value).
        let fits =
            updates.shape() == expected.as_slice() || (expected.is_empty() && updates.len() == 1);
        if !fits {
            return Err(OpError::input(
                2,
                codes::RUN_SHAPE,
                format!(
                    "updates shape {} must be indices.shape[:-1] + data.shape[k:] = {}",
                    fmt_shape(updates.shape()),
                    fmt_shape(&expected)
                ),
            ));
        }
        let slice = product(&d[k..]);
        let (offsets, contiguous) = match prepared {
            Some(p) => (Cow::Borrowed(&p.offsets[..]), p.contiguous),
            None => (
                Cow::Owned(tuple_offsets(runtime_indices(&indices)?, q, d, k)?),
                false,
            ),
        };
        // Every element replaced, in order: the output is the updates (no copy of the data,
        // none of the updates either when nothing else holds them).
        let covers_all =
            contiguous && offsets.first() == Some(&0) && offsets.len() * slice == data.len();
        if covers_all && self.reduction == Reduction::None {
            let out = take_or_copy(updates)
                .reshaped(d.to_vec())
                .map_err(|e| OpError::new(codes::INTERNAL, e.to_string()))?;
            return Ok(vec![Arc::new(out)]);
        }
        let kernel = NdKernel {
            offsets,
            slice,
            contiguous,
        };
        let out = dispatch_from(&kernel, data, &updates, self.reduction, MinMaxRule::Nd)?;
        Ok(vec![Arc::new(out)])
    }

    fn infer_impl(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
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

/// Applies the update slice of each tuple to `[offset, offset + slice)`, tuples in row-major
/// order. The output is cut into contiguous ranges that receive about equal shares of the
/// work ([`layout`]); the task of a range applies the part of every tuple's slice that falls
/// in it, so each element sees its updates in order.
struct NdKernel<'a> {
    offsets: Cow<'a, [usize]>,
    slice: usize,
    /// The slices lie back to back from `offsets[0]`, in order ([`Offsets`]).
    contiguous: bool,
}

impl ReduceKernel for NdKernel<'_> {
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        let (n, s) = (out.len(), self.slice);
        if n == 0 || s == 0 || self.offsets.is_empty() {
            return Ok(());
        }
        if self.contiguous {
            // One stretch, each element updated once, in tuple order: elementwise, in parallel.
            let base = self.offsets[0];
            let stretch = &mut out[base..base + self.offsets.len() * s];
            par::for_each_split_mut(stretch, PAR_MIN_ELEMENTS, &|start, chunk| {
                for (d, &u) in chunk.iter_mut().zip(&updates[start..]) {
                    *d = C::apply(*d, u);
                }
            });
            return Ok(());
        }
        if s == 1 {
            // One element per tuple (a flat index, as torch's slice assignment lowers to):
            // one lean pass. Tasks that each scan every tuple for their own range cost more
            // than they share (measured: 4M tuples onto 16 MB, 37 ms on two threads against
            // SERIAL_MS in one pass).
            for (&off, &u) in self.offsets.iter().zip(updates) {
                out[off] = C::apply(out[off], u);
            }
            return Ok(());
        }
        self.apply_in_place::<T, C>(out, &self.layout(n, false), updates);
        Ok(())
    }

    /// Scattered slices fill the output as they go ([`Window`](crate::fill::Window)): with tuples in order (sorted
    /// rows, or all the same) each stretch is copied just before its slices land on it, so
    /// the output is written to memory once (a 64 MB sum of 1M sorted rows of 16 on two
    /// threads: 11.0-11.2 to 8.8-9.7 ms). The contiguous and one-element paths copy first.
    fn run_into<T: Elem, C: Combine<T>>(
        &self,
        out: FillFrom<'_, T>,
        updates: &[T],
    ) -> Result<(), OpError> {
        let (n, s) = (out.len(), self.slice);
        if n == 0 || s <= 1 || self.offsets.is_empty() || self.contiguous {
            return self.run::<T, C>(out.copy_all(), updates);
        }
        let layout = self.layout(n, true);
        if !layout.fills {
            self.apply_in_place::<T, C>(out.copy_all(), &layout, updates);
            return Ok(());
        }
        let mut pieces: Vec<Option<FillFrom<'_, T>>> = (out
            .split_lengths(layout.ranges.iter().map(|r| r.len())))
        .into_iter()
        .map(Some)
        .collect();
        par::for_each_mut_by_cost(&mut pieces, &layout.costs, &|i, piece| {
            let Some(piece) = piece.take() else { return };
            let mut window = piece.window();
            self.apply::<T, C, _>(&layout, layout.ranges[i].clone(), &mut window, updates);
            window.finish();
        });
        Ok(())
    }
}

impl NdKernel<'_> {
    /// The output's ranges, one task each, and the order of the tuples' offsets.
    fn layout(&self, n: usize, copying: bool) -> Layout {
        let s = self.slice;
        let work = self.offsets.len().saturating_mul(s).max(n);
        let shares = Shares {
            ranges: pieces(work, PAR_MIN_ELEMENTS),
            scattered: if s < 64 { par::threads() } else { usize::MAX },
            copying,
        };
        balanced_ranges(n, s, &self.offsets, shares)
    }

    /// Applies every tuple to `out` (the data), each range of `layout` on its own task.
    fn apply_in_place<T: Elem, C: Combine<T>>(
        &self,
        out: &mut [T],
        layout: &Layout,
        updates: &[T],
    ) {
        let mut segs = Vec::with_capacity(layout.ranges.len());
        let mut rest = out;
        for r in &layout.ranges {
            let (seg, tail) = rest.split_at_mut(r.len());
            segs.push(seg);
            rest = tail;
        }
        let apply = |i: usize, seg: &mut &mut [T]| {
            self.apply::<T, C, _>(layout, layout.ranges[i].clone(), seg, updates)
        };
        if segs.len() == 1 {
            apply(0, &mut segs[0]);
        } else {
            par::for_each_mut_by_cost(&mut segs, &layout.costs, &apply);
        }
    }

    /// Applies, in tuple order, the part of each tuple's slice that falls in `range`, whose
    /// elements `seg` holds (`seg`'s element 0 is output element `range.start`).
    fn apply<T: Elem, C: Combine<T>, S: Span<T>>(
        &self,
        layout: &Layout,
        range: Range<usize>,
        seg: &mut S,
        updates: &[T],
    ) {
        let (lo, hi, s) = (range.start, range.end, self.slice);
        let offsets = &self.offsets[..];
        // In order, the tuples that reach the range are one run of them, found by bisection;
        // otherwise every task scans every tuple.
        let tuples = match layout.order {
            Order::Ascending => {
                offsets.partition_point(|&o| o + s <= lo)..offsets.partition_point(|&o| o < hi)
            }
            Order::Descending => {
                offsets.partition_point(|&o| o >= hi)..offsets.partition_point(|&o| o + s > lo)
            }
            Order::Scattered => 0..offsets.len(),
        };
        let ordered = layout.order != Order::Scattered;
        if layout.order != Order::Descending {
            self.apply_tuples::<T, C, S>(tuples, ordered, range, seg, updates);
            return;
        }
        // Descending offsets go through the range from its end to its start, which a
        // window fills downwards and the hardware follows worse (sorted rows reversed:
        // 10.1 ms against 8.5). A tuple's order matters only against the tuples on its own
        // slice, which are one run here, so blocks of whole runs, taken from the last one
        // to the first, visit the range upwards while each block applies its tuples in
        // order (the 1M reversed rows: 10.2 to 9.1 ms; blocks of 64 tuples, whose update
        // slices are then read backwards, took 14.6).
        let mut end = tuples.end;
        while end > tuples.start {
            let mut start = end.saturating_sub(DESCENDING_BLOCK).max(tuples.start);
            while start > tuples.start && offsets[start - 1] == offsets[start] {
                start -= 1;
            }
            self.apply_tuples::<T, C, S>(start..end, true, range.clone(), seg, updates);
            end = start;
        }
    }

    /// [`Self::apply`]'s loop over the tuples `tuples`, in order (`ordered`: their offsets
    /// are in order, so runs on one slice are consecutive).
    fn apply_tuples<T: Elem, C: Combine<T>, S: Span<T>>(
        &self,
        tuples: Range<usize>,
        ordered: bool,
        range: Range<usize>,
        seg: &mut S,
        updates: &[T],
    ) {
        let (lo, hi, s) = (range.start, range.end, self.slice);
        let offsets = &self.offsets[..];
        let base = seg.base_ptr();
        let mut j = tuples.start;
        while j < tuples.end {
            let off = offsets[j];
            // Scattered slices of a large output each wait on memory; the loop's own
            // look-ahead covers a few tuples, the hint 32 (a 64 MB sum of 1M rows of
            // 16: 29.5 to 18.3 ms on two threads, 32 to 21.5 on one).
            if let Some(&ahead) = offsets.get(j + ND_AHEAD) {
                if ahead >= lo && ahead < hi {
                    // Every line of the part of its slice in range (up to ND_AHEAD_BYTES),
                    // and of its update slice: a task reads only the slices of its own
                    // tuples, a pattern of lines the hardware does not follow. A slice of
                    // a line or less gets its first line only: the second one, when it
                    // straddles two, cost more than it saved (1M rows of 16 f32: 15.0 to
                    // 16.0 ms), while rows of 16 f64 gained (31.6 to 26.2, against only the
                    // first line of each).
                    let (at, first) = (base.wrapping_add(ahead - lo), (j + ND_AHEAD) * s);
                    if s * std::mem::size_of::<T>() <= 64 {
                        irun_opkit::simd::prefetch_write_ptr(at);
                        irun_opkit::simd::prefetch_read_ptr(updates.as_ptr().wrapping_add(first));
                    } else {
                        let n = s
                            .min(hi - ahead)
                            .min(ND_AHEAD_BYTES / std::mem::size_of::<T>());
                        irun_opkit::simd::prefetch_write(at, n);
                        irun_opkit::simd::prefetch_read(&updates[first..first + n]);
                    }
                }
            }
            // In order, consecutive tuples on one slice (all rows equal; a row's many
            // duplicates) are one run, seen from the tuple `RUN_MIN - 1` on: testing every
            // next tuple mispredicts on sorted rows' short runs of duplicates.
            let mut end = j + 1;
            if ordered && offsets.get(j + RUN_MIN - 1) == Some(&off) {
                end = j + RUN_MIN;
                while end < tuples.end && offsets[end] == off {
                    end += 1;
                }
            }
            let (a, b) = (off.max(lo), (off + s).min(hi));
            if a < b {
                let dst = seg.span(a - lo..b - lo);
                if end - j == 1 {
                    let src = &updates[j * s + (a - off)..j * s + (b - off)];
                    for (d, &u) in dst.iter_mut().zip(src) {
                        *d = C::apply(*d, u);
                    }
                } else {
                    apply_run::<T, C>(dst, updates, j..end, s, a - off);
                }
            }
            j = end;
        }
    }
}

/// Tuples per block of [`NdKernel::apply`] on descending offsets (before the block grows to
/// the start of its first run): 1024 did as well, 16384 worse (out of L2).
const DESCENDING_BLOCK: usize = 4096;

/// Runs of tuples on one slice at least this long go through [`apply_run`]; shorter ones
/// (the duplicates of uniform rows) go one by one.
const RUN_MIN: usize = 4;

/// Elements of a run's slice that [`apply_run`] keeps in registers at a time.
const RUN_BLOCK: usize = 16;

/// Applies the tuples `run`, which all update the slice elements `dst` (from column `col` of
/// the slice on), in order: [`RUN_BLOCK`] elements at a time, each held in registers while
/// every tuple of the run is applied to it. Element by element through memory, each tuple
/// waits for the last one's stores (1M tuples onto one row of 16: 7.1 ms on one thread,
/// while reading the updates alone takes about 2).
fn apply_run<T: Elem, C: Combine<T>>(
    dst: &mut [T],
    updates: &[T],
    run: Range<usize>,
    s: usize,
    col: usize,
) {
    for (c, block) in dst.chunks_mut(RUN_BLOCK).enumerate() {
        let first = col + c * RUN_BLOCK;
        if let Ok(block) = <&mut [T; RUN_BLOCK]>::try_from(&mut *block) {
            let mut acc = *block;
            for j in run.clone() {
                let u: &[T; RUN_BLOCK] = updates[j * s + first..][..RUN_BLOCK]
                    .try_into()
                    .expect("a whole block");
                for (a, &u) in acc.iter_mut().zip(u) {
                    *a = C::apply(*a, u);
                }
            }
            *block = acc;
            continue;
        }
        // The last, narrower block.
        for j in run.clone() {
            let u = &updates[j * s + first..][..block.len()];
            for (d, &u) in block.iter_mut().zip(u) {
                *d = C::apply(*d, u);
            }
        }
    }
}

/// How many tuples ahead the apply pass fetches the slice it will update, when the slice
/// starts in its task's range.
const ND_AHEAD: usize = 32;

/// How much of a slice [`NdKernel::apply_tuples`] fetches ahead: longer slices are runs of
/// lines the hardware's prefetch follows.
const ND_AHEAD_BYTES: usize = 256;

mod layout;
mod offsets;

use layout::{balanced_ranges, Layout, Order, Shares};
use offsets::tuple_offsets;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_halves;
