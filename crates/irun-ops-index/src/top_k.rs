//! TopK-1, -3 and -11: the K largest (`mode="max"`) or smallest (`min`) values along `axis`
//! and their indices. `axis`, `mode` and `sort` are required (omitted, reference and CPU
//! disagree); K is a rank-0 integer input in `0..=d` (past the dim is an error; the reference
//! corrupts its heap there). Order: by value, ties to the lower index (the reference, so
//! always "stable"); `sort="index"` re-sorts the K by index; `sort="none"` keeps value order.
//! NaN counts as larger than every number (torch's topk; OpenVINO's comparator breaks).
//! Outputs: values (data's type), indices (`index_element_type`, i32 default).

use std::cmp::Ordering;
use std::sync::Arc;

use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct TopK {
    pub version: u32,
    pub axis: i64,
    pub largest: bool,
    pub sort_by_index: bool,
    pub index_type: ElementType,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", None)?;
    a.required("mode")?;
    let largest = a.enum_or("mode", &["max", "min"], "max")? == "max";
    a.required("sort")?;
    let sort_by_index = a.enum_or("sort", &["value", "index", "none"], "value")? == "index";
    let index_type = if version == 1 {
        ElementType::I32
    } else {
        match a.get("index_element_type") {
            None => ElementType::I32,
            Some(_) => a.element_type("index_element_type")?,
        }
    };
    if !matches!(index_type, ElementType::I32 | ElementType::I64) {
        return Err(OpError::attribute(
            "index_element_type",
            "TopK index_element_type must be i32 or i64",
        ));
    }
    if version == 11 {
        // Ties always go to the lower index, which is what `stable` asks for.
        a.bool_or("stable", false)?;
    }
    Ok(Box::new(TopK {
        version,
        axis,
        largest,
        sort_by_index,
        index_type,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}
pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 3)
}
pub fn build_v11(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 11)
}

/// A total order for selection: NaN above every number.
fn order<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match a.partial_cmp(b) {
        Some(o) => o,
        #[allow(clippy::eq_op)]
        None => (a == a).cmp(&(b == b)).reverse(),
    }
}

/// Output positions (each `k * inner` values and indices of one outer index) per task, so
/// that small inputs stay on one task and large ones give each thread a few.
const TASK_ELEMENTS: usize = 1 << 14;

/// A slice at least this many times K is selected through a heap of K ([`TopK::select_few`]).
const FEW: usize = 8;

impl TopK {
    /// The selection order: the wanted values first, ties to the lower index. A total order,
    /// so an unstable selection or sort gives the stable result.
    fn ranks<T: PartialOrd>(&self, a: &(T, usize), b: &(T, usize)) -> Ordering {
        let by_value = order(&a.0, &b.0);
        (if self.largest {
            by_value.reverse()
        } else {
            by_value
        })
        .then(a.1.cmp(&b.1))
    }

    /// The K best of one slice (`d` values `stride` apart from `first`) into `best`.
    fn select<T: Scalar + PartialOrd>(
        &self,
        v: &[T],
        (first, stride, d): (usize, usize, usize),
        k: usize,
        best: &mut Vec<(T, usize)>,
    ) {
        best.clear();
        if k == 1 {
            let slice = &v[first..first + (d - 1) * stride + 1];
            best.push(match stride {
                1 => self.arg_best_row(slice),
                _ => self.arg_best(slice, stride),
            });
            return;
        }
        if k > 0 && k.saturating_mul(FEW) <= d {
            self.select_few(v, (first, stride, d), k, best);
            return;
        }
        best.extend((0..d).map(|j| (v[first + j * stride], j)));
        if k < d {
            best.select_nth_unstable_by(k - 1, |a, b| self.ranks(a, b));
            best.truncate(k);
        }
        best.sort_unstable_by(|a, b| self.ranks(a, b));
        if self.sort_by_index {
            best.sort_unstable_by_key(|e| e.1);
        }
    }

    /// [`Self::select`] for K much smaller than the slice: one pass that keeps the K best so
    /// far in a heap with the worst of them on top, so most values cost one comparison with
    /// that worst (a selection over the whole slice moved and compared 16-byte pairs: 20 ns a
    /// value). A later value that only ties the worst loses to its lower index, so a value
    /// enters only when strictly better.
    fn select_few<T: Scalar + PartialOrd>(
        &self,
        v: &[T],
        (first, stride, d): (usize, usize, usize),
        k: usize,
        heap: &mut Vec<(T, usize)>,
    ) {
        heap.extend((0..k).map(|j| (v[first + j * stride], j)));
        for top in (0..k / 2).rev() {
            self.sift_down(heap, top);
        }
        let better = |x: &T, than: &T| {
            let o = order(x, than);
            if self.largest {
                o == Ordering::Greater
            } else {
                o == Ordering::Less
            }
        };
        for j in k..d {
            let x = v[first + j * stride];
            if better(&x, &heap[0].0) {
                heap[0] = (x, j);
                self.sift_down(heap, 0);
            }
        }
        heap.sort_unstable_by(|a, b| self.ranks(a, b));
        if self.sort_by_index {
            heap.sort_unstable_by_key(|e| e.1);
        }
    }

    /// Restores the heap below `at`, the worst-ranked entry of every subtree at its root.
    fn sift_down<T: PartialOrd>(&self, heap: &mut [(T, usize)], mut at: usize) {
        loop {
            let mut worst = at;
            for child in [2 * at + 1, 2 * at + 2] {
                if child < heap.len() && self.ranks(&heap[child], &heap[worst]) == Ordering::Greater
                {
                    worst = child;
                }
            }
            if worst == at {
                return;
            }
            heap.swap(at, worst);
            at = worst;
        }
    }

    /// argmax/argmin of every `stride`-th value of `slice` (from its first): one pass, a
    /// strict comparison so that ties keep the lower index, NaN above every number.
    #[allow(clippy::eq_op)] // `c != c` is the NaN test, for any PartialOrd type
    fn arg_best<T: Scalar + PartialOrd>(&self, slice: &[T], stride: usize) -> (T, usize) {
        let mut top = (slice[0], 0);
        let values = slice.iter().step_by(stride).enumerate().skip(1);
        if self.largest {
            for (j, &c) in values {
                if c > top.0 || (c != c && top.0 == top.0) {
                    top = (c, j);
                }
            }
        } else {
            for (j, &c) in values {
                if c < top.0 || (top.0 != top.0 && c == c) {
                    top = (c, j);
                }
            }
        }
        top
    }

    /// [`TopK::arg_best`] of a contiguous row, in two passes the compiler vectorises: the
    /// extreme value over eight lanes (and whether there is a NaN), then its first position.
    /// Rows with a NaN take the scalar pass.
    #[allow(clippy::eq_op)]
    fn arg_best_row<T: Scalar + PartialOrd>(&self, row: &[T]) -> (T, usize) {
        const LANES: usize = 8;
        let mut lanes = [row[0]; LANES];
        let mut nan = false;
        let chunks = row.chunks_exact(LANES);
        let rest = chunks.remainder();
        let pick = |x: T, m: T| {
            if (self.largest && x > m) || (!self.largest && x < m) {
                x
            } else {
                m
            }
        };
        for c in chunks {
            for l in 0..LANES {
                nan |= c[l] != c[l];
                lanes[l] = pick(c[l], lanes[l]);
            }
        }
        for &x in rest {
            nan |= x != x;
            lanes[0] = pick(x, lanes[0]);
        }
        if nan {
            return self.arg_best(row, 1);
        }
        let m = lanes.iter().fold(lanes[0], |m, &x| pick(x, m));
        // The row's own value: -0.0 == 0.0, and the first of them wins.
        let j = row.iter().position(|&x| x == m).unwrap_or(0);
        (row[j], j)
    }

    /// k = 1 along an axis that is not innermost: each task takes a run of columns of one
    /// outer block and keeps the best value and its index per column, a row at a time, so
    /// the comparisons run across contiguous columns (vectorisable) instead of striding
    /// `inner` apart per element. The same rule as [`TopK::arg_best`]: a strict comparison
    /// keeps the lower index on ties, NaN above every number.
    #[allow(clippy::eq_op)]
    fn best_down_columns<T: Scalar + PartialOrd>(
        &self,
        v: &[T],
        d: usize,
        inner: usize,
        vals: &mut [T],
        idx: &mut [i64],
    ) {
        const COLUMNS: usize = 1024;
        let mut tasks: Vec<(usize, &mut [T], &mut [i64])> = Vec::new();
        for (o, (vs, is)) in vals
            .chunks_mut(inner)
            .zip(idx.chunks_mut(inner))
            .enumerate()
        {
            for (c, (vs, is)) in vs
                .chunks_mut(COLUMNS)
                .zip(is.chunks_mut(COLUMNS))
                .enumerate()
            {
                tasks.push((o * d * inner + c * COLUMNS, vs, is));
            }
        }
        par::for_each_mut(&mut tasks, &|_, (first, vs, is)| {
            let w = vs.len();
            // The best values and rows so far, read from one pair of buffers and written to
            // the other, row after row. Updated in place, the update compiled to masked stores
            // (`vmaskmovps`), which AMD cores run microcoded: three quarters of a k = 1 TopK
            // down 21 channels. Row numbers as u32 beside the values: lanes of one width, so
            // the selects vectorise (the caller checked that d fits).
            let mut top = [v[*first..*first + w].to_vec(), vec![T::default(); w]];
            let mut at = [vec![0u32; w], vec![0u32; w]];
            // One loop per direction, compiled for the widest vector unit: the comparison
            // chosen inside the loop, and the baseline unit, kept it scalar.
            let largest = self.largest;
            irun_opkit::simd::widest(
                #[inline(always)]
                || {
                    for j in 1..d {
                        let row = &v[*first + j * inner..][..w];
                        let [top_in, top_out] = &mut top;
                        let [at_in, at_out] = &mut at;
                        let (top_in, at_in) = (&*top_in, &*at_in);
                        let j = j as u32;
                        let old = top_in.iter().zip(at_in).zip(row);
                        let new = top_out.iter_mut().zip(at_out.iter_mut());
                        if largest {
                            for (((&t, &a), &c), (top, at)) in old.zip(new) {
                                let better = (c > t) | ((c != c) & (t == t));
                                *top = if better { c } else { t };
                                *at = if better { j } else { a };
                            }
                        } else {
                            for (((&t, &a), &c), (top, at)) in old.zip(new) {
                                let better = (c < t) | ((t != t) & (c == c));
                                *top = if better { c } else { t };
                                *at = if better { j } else { a };
                            }
                        }
                        top.swap(0, 1);
                        at.swap(0, 1);
                    }
                },
            );
            vs.copy_from_slice(&top[0]);
            let at = &at[0];
            for (i, &a) in is.iter_mut().zip(at) {
                *i = a as i64;
            }
        });
    }

    fn run<T: Scalar + PartialOrd>(
        &self,
        x: &Tensor,
        axis: usize,
        k: usize,
    ) -> Result<(Tensor, Vec<i64>), OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let s = x.shape();
        let (outer, d, inner): (usize, usize, usize) = (
            s[..axis].iter().product(),
            s[axis],
            s[axis + 1..].iter().product(),
        );
        let mut shape = s.to_vec();
        shape[axis] = k;
        let block = k * inner;
        let n = outer * block;
        let (mut vals, mut idx) = (try_zeroed::<T>(n)?, vec![0i64; n]);
        if n > 0 && k == 1 && inner > 1 && d <= u32::MAX as usize {
            self.best_down_columns(v, d, inner, &mut vals, &mut idx);
        } else if n > 0 {
            // Whole outer blocks per task, values and indices cut at the same places.
            let per_task = (TASK_ELEMENTS / block).max(1) * block;
            let mut tasks: Vec<(&mut [T], &mut [i64])> = vals
                .chunks_mut(per_task)
                .zip(idx.chunks_mut(per_task))
                .collect();
            par::for_each_mut(&mut tasks, &|t, (vs, is)| {
                let mut best = Vec::with_capacity(if k == 1 { 1 } else { d });
                for (b, (vs, is)) in vs.chunks_mut(block).zip(is.chunks_mut(block)).enumerate() {
                    let o = t * per_task / block + b;
                    for i in 0..inner {
                        self.select(v, (o * d * inner + i, inner, d), k, &mut best);
                        for (r, &(val, j)) in best.iter().enumerate() {
                            vs[r * inner + i] = val;
                            is[r * inner + i] = j as i64;
                        }
                    }
                }
            });
        }
        let values = Tensor::new(x.element_type(), shape, T::wrap(vals))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok((values, idx))
    }
}

impl Op for TopK {
    fn name(&self) -> &'static str {
        match self.version {
            1 => "TopK-1",
            3 => "TopK-3",
            _ => "TopK-11",
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        if let Some(r) = inputs[1].rank().filter(|&r| r != 0) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{}: K must be a scalar (rank 0), got rank {r}", self.name()),
            ));
        }
        let k = known_ints(&inputs[1]).and_then(|v| v.first().copied());
        let shape = match inputs[0].shape.dims() {
            Some(d) => {
                let axis = norm_axis(self.axis, d.len(), None, self.name())?;
                let mut out = d.to_vec();
                out[axis] = match k {
                    Some(k) if k < 0 || d[axis].max().is_some_and(|m| k as u64 > m) => {
                        return Err(OpError::input(
                            1,
                            codes::BAD_VALUE,
                            format!("{}: K = {k} is outside 0..={}", self.name(), d[axis]),
                        ))
                    }
                    Some(k) => Dim::fixed(k as u64),
                    None => Dim::DYNAMIC,
                };
                PartialShape::new(out)
            }
            None => PartialShape::dynamic_rank(),
        };
        Ok(vec![
            Fact::new(inputs[0].ty, shape.clone()),
            Fact::new(self.index_type, shape),
        ])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, k] = take_inputs::<2>(inputs, self.name())?;
        let axis = norm_axis(self.axis, x.shape().len(), None, self.name())?;
        let d = x.shape()[axis];
        let k = ints(&k, 1)?.first().copied().unwrap_or(-1);
        if k < 0 || k as usize > d {
            return Err(OpError::input(
                1,
                codes::BAD_VALUE,
                format!("{}: K = {k} is outside 0..={d}", self.name()),
            ));
        }
        let ty = x.element_type();
        let (values, idx) = with_number!(ty, T => self.run::<T>(&x, axis, k as usize)?,
            else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name()))));
        let shape = values.shape().to_vec();
        let indices = if self.index_type == ElementType::I32 {
            Tensor::from_i32(shape, idx.iter().map(|&i| i as i32).collect())
        } else {
            Tensor::from_i64(shape, idx)
        }
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(values), Arc::new(indices)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn topk(largest: bool, by_index: bool) -> TopK {
        TopK {
            version: 11,
            axis: -1,
            largest,
            sort_by_index: by_index,
            index_type: ElementType::I32,
        }
    }

    #[test]
    fn orders_ties_and_sorting() {
        let x = f32s(&[5], &[1., 9., 3., 9., 5.]);
        let out = run(&topk(true, false), vec![x.clone(), i64s(&[], &[3])]).unwrap();
        assert_eq!(out[0], f32s(&[3], &[9., 9., 5.]));
        assert_eq!(out[1], i32s(&[3], &[1, 3, 4]), "ties to the lower index");
        let out = run(&topk(true, true), vec![x.clone(), i64s(&[], &[3])]).unwrap();
        assert_eq!(out[1], i32s(&[3], &[1, 3, 4]));
        let out = run(&topk(false, false), vec![x.clone(), i64s(&[], &[2])]).unwrap();
        assert_eq!(out[0], f32s(&[2], &[1., 3.]));
        let out = run(
            &topk(true, false),
            vec![f32s(&[3], &[1., f32::NAN, 2.]), i64s(&[], &[1])],
        )
        .unwrap();
        assert!(
            out[0].values::<f32>().unwrap()[0].is_nan(),
            "NaN is the largest"
        );
        let e = run(&topk(true, false), vec![x, i64s(&[], &[6])]).unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
    }

    /// The spec's order, written the slow way: sort every slice by (value, index), NaN as
    /// the largest value.
    fn reference(
        x: &[f32],
        dims: [usize; 3],
        k: usize,
        largest: bool,
        by_index: bool,
    ) -> (Vec<f32>, Vec<i32>) {
        let [outer, d, inner] = dims;
        let (mut vals, mut idx) = (vec![0.0; outer * k * inner], vec![0; outer * k * inner]);
        for o in 0..outer {
            for i in 0..inner {
                let mut all: Vec<(f32, usize)> =
                    (0..d).map(|j| (x[(o * d + j) * inner + i], j)).collect();
                all.sort_by(|a, b| {
                    let key = |v: f32| if v.is_nan() { f32::INFINITY } else { v };
                    let by_value = key(a.0)
                        .total_cmp(&key(b.0))
                        .then((a.0.is_nan()).cmp(&b.0.is_nan()));
                    (if largest {
                        by_value.reverse()
                    } else {
                        by_value
                    })
                    .then(a.1.cmp(&b.1))
                });
                all.truncate(k);
                if by_index {
                    all.sort_by_key(|e| e.1);
                }
                for (r, (v, j)) in all.into_iter().enumerate() {
                    vals[(o * k + r) * inner + i] = v;
                    idx[(o * k + r) * inner + i] = j as i32;
                }
            }
        }
        (vals, idx)
    }

    #[test]
    fn selection_matches_a_full_sort_over_many_tasks() {
        // Few distinct values (many ties), more outer blocks than one task holds; every K
        // from 0 to d.
        check_against_sort([700, 9, 3], &(0..=9).collect::<Vec<_>>());
    }

    #[test]
    fn heap_selection_of_few_matches_a_full_sort() {
        // Slices long enough for the heap of K (K up to d / FEW), on both sides of that bound.
        check_against_sort([6, 300, 2], &[1, 2, 3, 17, 37, 38, 100, 300]);
    }

    /// TopK on a tensor of `[outer, d, inner]` with ties and a NaN here and there against
    /// [`reference`], for each K in `ks`, both modes, both sorts, on the inner axis and as
    /// the last axis.
    fn check_against_sort([outer, d, inner]: [usize; 3], ks: &[usize]) {
        let x: Vec<f32> = (0..outer * d * inner)
            .map(|i| {
                if i % 97 == 5 {
                    f32::NAN
                } else {
                    ((i * 7919) % 13) as f32 - 6.0
                }
            })
            .collect();
        let mut shapes = vec![[outer, d, inner], [outer * inner, d, 1]];
        if outer * inner == 2 * 1050 {
            // More columns than one task of the k = 1 column walk takes.
            shapes.push([2, d, 1050]);
        }
        for &k in ks {
            for largest in [true, false] {
                for by_index in [false, true] {
                    for shape in &shapes {
                        let op = TopK {
                            version: 11,
                            axis: 1,
                            largest,
                            sort_by_index: by_index,
                            index_type: ElementType::I32,
                        };
                        let out = run(&op, vec![f32s(shape, &x), i64s(&[], &[k as i64])]).unwrap();
                        let (vals, idx) = reference(&x, *shape, k, largest, by_index);
                        let got = out[0].values::<f32>().unwrap();
                        let same = got
                            .iter()
                            .zip(&vals)
                            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
                        assert!(
                            same,
                            "values, k={k} largest={largest} by_index={by_index} {shape:?}"
                        );
                        assert_eq!(
                            out[1].values::<i32>().unwrap(),
                            &idx[..],
                            "indices, k={k} largest={largest} by_index={by_index} {shape:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn along_an_inner_axis() {
        let op = TopK {
            version: 3,
            axis: 0,
            largest: true,
            sort_by_index: false,
            index_type: ElementType::I64,
        };
        let out = run(
            &op,
            vec![i32s(&[3, 2], &[1, 6, 5, 2, 3, 4]), i32s(&[], &[1])],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[1, 2], &[5, 6]));
        assert_eq!(out[1], i64s(&[1, 2], &[1, 0]));
    }
}
