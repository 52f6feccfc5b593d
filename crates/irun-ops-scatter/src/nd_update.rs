//! ScatterNDUpdate-3 (written `opset4`) and -15: `indices` is an array of k-tuples addressing
//! elements (k = rank) or slices (k < rank) of `data`; each gets the matching slice of `updates`.
//!
//! Inputs: data (rank r >= 1), indices (rank q >= 1, i32/i64, last dim k <= r), updates of shape
//! `indices.shape[:-1] + data.shape[k:]`. v15 adds `reduction` (none, sum, sub, prod, min, max).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::par;
use irun_tensor::{fmt_shape, ElementType};

use super::reduce::{dispatch, Combine, Elem, MinMaxRule, ReduceKernel};
use super::{
    check_same_type, dims_compatible, fmt_dims, index_out_of_range, merge_data_updates, product,
    runtime_indices, Reduction,
};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use std::ops::Range;

use crate::kernel::{pieces, split_range, take_or_copy, PAR_MIN_ELEMENTS};
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
    offsets: OnceLock<Option<Vec<usize>>>,
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
                tuple_offsets(values, q, &self.data_shape, k).ok()
            })
        });
        self.op
            .eval_with(inputs, offsets.and_then(|o| o.as_deref()))
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
        prepared: Option<&[usize]>,
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
        let offsets = match prepared {
            Some(offsets) => Cow::Borrowed(offsets),
            None => Cow::Owned(tuple_offsets(runtime_indices(&indices)?, q, d, k)?),
        };
        let kernel = NdKernel {
            offsets,
            slice: product(&d[k..]),
        };
        let mut out = take_or_copy(data);
        dispatch(&kernel, &mut out, &updates, self.reduction, MinMaxRule::Nd)?;
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

/// The flat element offset in data of each index tuple, in row-major order; negative
/// coordinates are normalised (`c + dim`), anything still outside `[0, dim)` is an error.
fn tuple_offsets(
    indices: crate::kernel::IndexValues<'_>,
    shape: &[usize],
    data: &[usize],
    k: usize,
) -> Result<Vec<usize>, OpError> {
    let dims = &data[..k];
    let tuples = product(&shape[..shape.len() - 1]);
    // Element strides of the addressed dims: coordinate j moves by prod(data[j+1:]).
    let strides: Vec<usize> = (0..k).map(|j| product(&data[j + 1..])).collect();
    let mut offsets = vec![0usize; tuples];
    if k == 0 {
        return Ok(offsets);
    }
    let chunk = (PAR_MIN_ELEMENTS / k).max(1);
    let mut chunks: Vec<&mut [usize]> = offsets.chunks_mut(chunk).collect();
    par::try_for_each_mut(&mut chunks, &|ci, offs| {
        let first = ci * chunk;
        let mut buf = vec![0i64; offs.len() * k];
        indices.read(first * k..(first + offs.len()) * k, &mut buf);
        for (t, (off, tuple)) in offs.iter_mut().zip(buf.chunks_exact(k)).enumerate() {
            let mut o = 0usize;
            for (j, &v) in tuple.iter().enumerate() {
                let dim = dims[j] as i64;
                let c = if v < 0 { v + dim } else { v };
                if !(0..dim).contains(&c) {
                    let pos = (first + t) * k + j;
                    let e = index_out_of_range(
                        shape,
                        pos,
                        v,
                        &format!("[{}, {}]", -dim, dim - 1),
                        &format!("data dim {j} of size {dim}"),
                    );
                    return Err((pos, e));
                }
                o += c as usize * strides[j];
            }
            *off = o;
        }
        Ok(())
    })?;
    Ok(offsets)
}

/// Applies the update slice of each tuple to `[offset, offset + slice)`, tuples in row-major
/// order. The output is cut into contiguous ranges, one task each, that receive about equal
/// numbers of updates ([`balanced_ranges`]); a task applies the part of every tuple's slice
/// that falls in its range, so each element sees its updates in order.
struct NdKernel<'a> {
    offsets: Cow<'a, [usize]>,
    slice: usize,
}

impl ReduceKernel for NdKernel<'_> {
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
        let (n, s) = (out.len(), self.slice);
        if n == 0 || s == 0 || self.offsets.is_empty() {
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
        let work = self.offsets.len().saturating_mul(s).max(n);
        let mut k = pieces(work, PAR_MIN_ELEMENTS);
        if s < 64 {
            // Every task scans every tuple; with short slices that scan is the cost.
            k = k.min(par::threads());
        }
        let ranges = if k > 1 {
            balanced_ranges(n, k, &self.offsets)
        } else {
            split_range(n, k)
        };
        let apply = |lo: usize, seg: &mut [T]| {
            let hi = lo + seg.len();
            for (j, &off) in self.offsets.iter().enumerate() {
                let (a, b) = (off.max(lo), (off + s).min(hi));
                if a < b {
                    let src = &updates[j * s + (a - off)..j * s + (b - off)];
                    for (d, &u) in seg[a - lo..b - lo].iter_mut().zip(src) {
                        *d = C::apply(*d, u);
                    }
                }
            }
        };
        if ranges.len() == 1 {
            apply(0, out);
            return Ok(());
        }
        // Cut `out` into the ranges' slices (contiguous and in order), then run them in parallel.
        let mut segs = Vec::with_capacity(ranges.len());
        let mut rest = out;
        for r in &ranges {
            let (seg, tail) = rest.split_at_mut(r.len());
            segs.push((r.start, seg));
            rest = tail;
        }
        par::for_each_mut(&mut segs, &|_, (lo, seg)| apply(*lo, seg));
        Ok(())
    }
}

/// Fine ranges of the output that [`balanced_ranges`] counts tuples in.
const FINE_RANGES: usize = 4096;

/// At most `k` contiguous, non-empty ranges covering `0..n` that receive about equal numbers
/// of tuples, each counted in the fine range (at most 1/4096 of the output) where its slice
/// starts; so
/// skewed indices (a power law, a few hot rows) still share the apply work out evenly. Cuts
/// fall on fine-range boundaries; a range hotter than a share is one task's alone.
fn balanced_ranges(n: usize, k: usize, offsets: &[usize]) -> Vec<Range<usize>> {
    // A power of two, so that a shift finds an offset's range (a division per tuple took a
    // tenth of a 1M-tuple scatter).
    let fine = n.div_ceil(FINE_RANGES).max(1).next_power_of_two();
    let shift = fine.trailing_zeros();
    let mut counts = vec![0u64; n.div_ceil(fine)];
    for &off in offsets {
        if let Some(c) = counts.get_mut(off >> shift) {
            *c += 1;
        }
    }
    let total: u64 = counts.iter().sum::<u64>().max(1);
    let mut ranges = Vec::with_capacity(k);
    let (mut start, mut acc) = (0usize, 0u64);
    for (f, &c) in counts.iter().enumerate() {
        acc += c;
        let end = ((f + 1) * fine).min(n);
        let share = (ranges.len() as u64 + 1) * total;
        if ranges.len() + 1 < k && acc * k as u64 >= share && end < n {
            ranges.push(start..end);
            start = end;
        }
    }
    ranges.push(start..n);
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{err, fact, infer1};

    #[test]
    fn ranges_share_the_tuples_out() {
        // Half of the tuples at offset 0, the rest spread out.
        let offsets: Vec<usize> = (0..1000)
            .map(|i| if i % 2 == 0 { 0 } else { i * 97 % 100_000 })
            .collect();
        let r = balanced_ranges(100_000, 2, &offsets);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start, r[1].end), (0, 100_000));
        assert_eq!(r[0].end, r[1].start);
        assert!(
            r[0].len() < 1000,
            "the hot start is a range of its own: {r:?}"
        );
        // Every offset in one place: one range holds it, the ranges still cover the output.
        let r = balanced_ranges(10, 3, &[4; 100]);
        assert_eq!(r.first().map(|r| r.start), Some(0));
        assert_eq!(r.last().map(|r| r.end), Some(10));
        assert!(r
            .windows(2)
            .all(|w| w[0].end == w[1].start && !w[0].is_empty()));
    }
    use irun_tensor::ElementType::*;
    use irun_tensor::Tensor;

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

    mod eval {
        use super::*;
        use crate::testing::{eval1, f32s, i32s, i64s};

        fn nd(reduction: Reduction) -> ScatterNDUpdate {
            ScatterNDUpdate {
                version: 15,
                reduction,
            }
        }

        /// Reference doc 2.3 verified values (the spec's example 1 and 4 are wrong).
        #[test]
        fn v15_examples_with_duplicates_and_negative_indices() {
            for (red, want) in [
                (Reduction::None, [50, 40, 20, 4]),
                (Reduction::Sum, [61, 72, 23, 4]),
                (Reduction::Sub, [-59, -68, -17, 4]),
                (Reduction::Prod, [500, 2400, 60, 4]),
            ] {
                let out = eval1(
                    &nd(red),
                    vec![
                        i32s(&[4], &[1, 2, 3, 4]),
                        i64s(&[5, 1], &[0, 2, -3, -3, 0]),
                        i32s(&[5], &[10, 20, 30, 40, 50]),
                    ],
                )
                .unwrap();
                assert_eq!(out.values::<i32>().unwrap(), &want, "{red:?}");
            }
        }

        /// op_reference `4x4_v2`-style slices: k = 2 of a rank-3 tensor.
        #[test]
        fn slices_of_rank_3() {
            let data: Vec<i32> = (0..18).collect();
            let out = eval1(
                &nd(Reduction::None),
                vec![
                    i32s(&[2, 3, 3], &data),
                    i32s(&[2, 2], &[1, 2, 0, 0]),
                    i32s(&[2, 3], &[91, 92, 93, 81, 82, 83]),
                ],
            );
            let out = out.unwrap();
            let v = out.values::<i32>().unwrap();
            assert_eq!(&v[0..3], &[81, 82, 83]);
            assert_eq!(&v[15..18], &[91, 92, 93]);
            assert_eq!(v[3], 3);
        }

        #[test]
        fn nan_accumulator_stays_and_nan_update_is_ignored() {
            let out = eval1(
                &nd(Reduction::Max),
                vec![
                    f32s(&[2], &[1.0, f32::NAN]),
                    i64s(&[3, 1], &[0, 1, 0]),
                    f32s(&[3], &[f32::NAN, 5.0, 2.0]),
                ],
            )
            .unwrap();
            let v = out.values::<f32>().unwrap();
            assert_eq!(v[0], 2.0);
            assert!(v[1].is_nan());
        }

        #[test]
        fn out_of_bounds_tuple_is_an_error() {
            let e = eval1(
                &nd(Reduction::None),
                vec![
                    f32s(&[2, 3], &[0.0; 6]),
                    i64s(&[1, 2], &[1, 3]),
                    f32s(&[1], &[10.0]),
                ],
            )
            .unwrap_err();
            assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
            assert!(
                e.message.contains("index 3 at position [0,1]"),
                "{}",
                e.message
            );
        }

        #[test]
        fn boolean_sub_is_xor() {
            let b = |v: &[bool]| Tensor::from_bool(vec![v.len()], v.to_vec()).unwrap();
            let out = eval1(
                &nd(Reduction::Sub),
                vec![
                    b(&[false, true]),
                    i64s(&[4, 1], &[0, 0, 1, 1]),
                    b(&[true; 4]),
                ],
            )
            .unwrap();
            assert_eq!(out.values::<bool>().unwrap(), &[false, true]);
        }

        #[test]
        fn skewed_rows_match_the_sequential_reference_at_any_thread_count() {
            let rows = 50_000usize;
            let n = 40_000usize;
            // A power law over rows (most tuples in the first rows) and one hot row.
            let idx: Vec<i64> = (0..n)
                .map(|i| {
                    let u = ((i * 7919) % n) as f64 / n as f64;
                    if i % 5 == 0 {
                        777
                    } else {
                        (rows as f64 * u * u * u) as i64
                    }
                })
                .collect();
            let upd: Vec<f32> = (0..n * 4).map(|i| (i % 29) as f32 * 0.31 - 4.0).collect();
            let mut want = vec![0.5f32; rows * 4];
            for (p, &i) in idx.iter().enumerate() {
                for c in 0..4 {
                    want[i as usize * 4 + c] += upd[p * 4 + c];
                }
            }
            for threads in [1, 2, 3] {
                let out = crate::testing::eval_with(
                    &nd(Reduction::Sum),
                    vec![
                        f32s(&[rows, 4], &vec![0.5; rows * 4]),
                        i64s(&[n, 1], &idx),
                        f32s(&[n, 4], &upd),
                    ],
                    threads,
                )
                .unwrap();
                let got = out.values::<f32>().unwrap();
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                    "{threads} threads differ from the sequential reference"
                );
            }
        }

        #[test]
        fn parallel_ranges_agree_with_one_thread() {
            let rows = 4096;
            let idx: Vec<i64> = (0..20_000).map(|i| (i * 7919) % rows - rows / 2).collect();
            let upd: Vec<f32> = (0..320_000).map(|i| i as f32 * 0.37).collect();
            for red in [Reduction::None, Reduction::Sum, Reduction::Min] {
                let out = eval1(
                    &nd(red),
                    vec![
                        f32s(&[rows as usize, 16], &vec![0.5; rows as usize * 16]),
                        i64s(&[20_000, 1], &idx),
                        f32s(&[20_000, 16], &upd),
                    ],
                )
                .unwrap();
                // The spec's loop: each index row in order updates one data row.
                let mut want = vec![0.5f32; rows as usize * 16];
                for (p, &i) in idx.iter().enumerate() {
                    let row = i.rem_euclid(rows) as usize;
                    for c in 0..16 {
                        let (acc, u) = (want[row * 16 + c], upd[p * 16 + c]);
                        want[row * 16 + c] = match red {
                            Reduction::None => u,
                            Reduction::Sum => acc + u,
                            _ => acc.min(u),
                        };
                    }
                }
                let got = out.values::<f32>().unwrap();
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                    "{red:?} differs from the sequential reference"
                );
            }
        }

        /// Constant indices prepared (their offsets worked out at the first run) give the
        /// run's results; a bad constant gives the run's error.
        #[test]
        fn prepared_offsets_match_the_run() {
            use crate::testing::eval_prepared;
            let n = 3 * PREPARE_MIN_INDICES;
            // Every element of [n/4, 4] once, in a scrambled order; then sums with duplicates.
            let perm: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % n as i64).collect();
            let idx: Vec<i64> = perm.iter().flat_map(|&p| [p / 4, p % 4]).collect();
            let upd: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let data = f32s(&[n / 4, 4], &vec![1.0; n]);
            for red in [Reduction::None, Reduction::Sum] {
                let inputs = vec![data.clone(), i64s(&[n, 2], &idx), f32s(&[n], &upd)];
                let want = eval1(&nd(red), inputs.clone()).unwrap();
                for threads in [1, 2] {
                    let got =
                        eval_prepared(&nd(red), inputs.clone(), &[true, true, false], threads)
                            .expect("constant indices are prepared")
                            .unwrap();
                    assert_eq!(got, want, "{red:?} at {threads} thread(s)");
                }
            }
            let mut bad = idx.clone();
            bad[2 * n - 1] = 4;
            let inputs = vec![data, i64s(&[n, 2], &bad), f32s(&[n], &upd)];
            let plain = eval1(&nd(Reduction::None), inputs.clone()).unwrap_err();
            let prepared = eval_prepared(&nd(Reduction::None), inputs, &[true, true, false], 1)
                .expect("prepared; the offsets are worked out at the first run")
                .unwrap_err();
            assert_eq!(format!("{prepared:?}"), format!("{plain:?}"));
        }
    }
}
