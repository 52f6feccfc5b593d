//! ScatterElementsUpdate with constant indices: the work the indices imply, done once at compile
//! time ([`Op::prepare`](crate::op::Op::prepare)).
//!
//! Every index is validated and turned into its output offset, and the positions are grouped
//! by output region (bucket) with a stable counting sort, so each bucket's entries stay in
//! row-major order. A run then only applies each bucket's entries in order, buckets in
//! parallel: no validation, no partition pass, and a bucket's read-modify-writes stay within a
//! cache-sized part of the output. When the updates are constant too, they are stored in entry
//! order, so a run reads two sequential streams. Outputs are those of the unprepared kernel
//! bit for bit: each output element still sees its updates in row-major order, whatever the
//! bucket layout and the number of threads.

use std::sync::Arc;

use irun_tensor::Tensor;

use super::elements_update::{hit, Coords, Geometry, ScatterElementsUpdate};
use super::reduce::{Combine, Elem};
use crate::kernel::{try_zeroed, DisjointSlice, IndexValues};
use crate::op::{OpError, Prepared, Value};

/// The indices of one ScatterElementsUpdate, validated and grouped by output bucket.
#[derive(Debug)]
pub(super) struct ElementsPlan {
    /// The output offset of every entry; bucket `b` holds `bounds[b]..bounds[b + 1]`, and all
    /// its offsets are in `[b << shift, (b + 1) << shift)`.
    offsets: Vec<u32>,
    /// Each entry's position in indices and updates. Empty when entries are in position order
    /// (one bucket) or when `sorted_updates` holds the updates in entry order.
    positions: Vec<u32>,
    bounds: Vec<usize>,
    /// The constant updates in entry order.
    pub(super) sorted_updates: Option<Tensor>,
}

/// Fewer indices than this are not worth a plan (the run-time kernel validates them in less
/// time than the plan's memory costs).
pub(super) const PLAN_MIN_INDICES: usize = 1 << 18;

/// Output bytes per bucket when the updates are stored in entry order: half a 1 MiB L2, so a
/// bucket's read-modify-writes hit the cache. (Measured on the 2-core EPYC: 2 to 32 buckets
/// of a 4 MiB histogram apply in the same 9-10 ms; more buckets balance skewed indices.)
const SORTED_BUCKET_BYTES: usize = 512 << 10;

/// The most buckets of a plan.
const MAX_BUCKETS: usize = 1024;

impl ElementsPlan {
    /// The plan for `indices` on data of `data_len` elements of `elem_bytes` bytes, split for
    /// `threads` workers; `None` when an index is out of range (the run reports it), when
    /// offsets or positions do not fit in 32 bits, or when memory runs out.
    pub(super) fn build(
        g: &Geometry,
        indices: &Tensor,
        updates: Option<&Tensor>,
        data_len: usize,
        elem_bytes: usize,
        threads: usize,
    ) -> Option<ElementsPlan> {
        let values = IndexValues::of(indices)?;
        let n = values.len();
        if n == 0 || n > u32::MAX as usize || data_len > u32::MAX as usize {
            return None;
        }
        let by_position = offsets_in_position_order(g, &values)?;
        // With updates read through `positions`, every bucket streams all of them, so one
        // bucket per thread; stored in entry order, buckets cost nothing and stay in cache.
        let wanted = match updates {
            Some(_) => threads.max(data_len.saturating_mul(elem_bytes) / SORTED_BUCKET_BYTES),
            None => threads,
        }
        .clamp(1, MAX_BUCKETS);
        let shift = data_len.div_ceil(wanted).next_power_of_two().ilog2();
        let buckets = ((data_len - 1) >> shift) + 1;
        if buckets == 1 {
            return Some(ElementsPlan {
                offsets: by_position,
                positions: Vec::new(),
                bounds: vec![0, n],
                sorted_updates: None,
            });
        }
        // Stable counting sort by bucket.
        let mut bounds = vec![0usize; buckets + 1];
        for &off in &by_position {
            bounds[(off >> shift) as usize + 1] += 1;
        }
        for b in 0..buckets {
            bounds[b + 1] += bounds[b];
        }
        let mut next = bounds.clone();
        let mut offsets = try_zeroed::<u32>(n).ok()?;
        let mut positions = try_zeroed::<u32>(n).ok()?;
        for (p, &off) in by_position.iter().enumerate() {
            let slot = &mut next[(off >> shift) as usize];
            offsets[*slot] = off;
            positions[*slot] = p as u32;
            *slot += 1;
        }
        drop(by_position);
        let sorted_updates = match updates {
            Some(u) if u.len() == n => {
                let storage = u.storage().take(&positions);
                positions = Vec::new();
                Some(Tensor::new(u.element_type(), vec![n], storage).ok()?)
            }
            _ => None,
        };
        Some(ElementsPlan {
            offsets,
            positions,
            bounds,
            sorted_updates,
        })
    }

    /// Applies `updates` (in entry order when the plan sorted them, else in position order)
    /// bucket by bucket, buckets in parallel.
    pub(super) fn apply<T: Elem, C: Combine<T>, const TRACK: bool>(
        &self,
        out: &DisjointSlice<T>,
        counts: &DisjointSlice<u32>,
        init: bool,
        updates: &[T],
    ) {
        let buckets = self.bounds.len() - 1;
        crate::par::for_each_task(buckets, &|b| {
            let entries = self.bounds[b]..self.bounds[b + 1];
            let offsets = &self.offsets[entries.clone()];
            // SAFETY (both loops): every offset of bucket `b` lies in bucket `b`'s range of the
            // output (`build` sorted them there) and one task applies each bucket, so no
            // element is touched by two tasks; `hit` checks the bounds.
            if self.positions.is_empty() {
                for (&off, &u) in offsets.iter().zip(&updates[entries]) {
                    unsafe { hit::<T, C, TRACK>(out, counts, init, off as usize, u) };
                }
            } else {
                for (&off, &p) in offsets.iter().zip(&self.positions[entries]) {
                    let u = updates[p as usize];
                    unsafe { hit::<T, C, TRACK>(out, counts, init, off as usize, u) };
                }
            }
        });
    }

    fn byte_size(&self) -> usize {
        4 * (self.offsets.len() + self.positions.len())
            + self.sorted_updates.as_ref().map_or(0, Tensor::byte_size)
    }
}

/// The output offset of every position, in position order; `None` at the first index out of
/// range or when memory runs out.
fn offsets_in_position_order(g: &Geometry, values: &IndexValues) -> Option<Vec<u32>> {
    let n = values.len();
    let mut offsets: Vec<u32> = Vec::new();
    offsets.try_reserve_exact(n).ok()?;
    let mut at = Coords::at(g, 0);
    values
        .for_each_block(0..n, |_, vals| {
            for &v in vals {
                let t = g.target(v);
                if t >= g.data_along {
                    return Err(());
                }
                offsets.push(at.offset(g, t) as u32);
                at.advance(g);
            }
            Ok(())
        })
        .ok()?;
    Some(offsets)
}

/// A ScatterElementsUpdate prepared for its constant indices (and updates): runs on the plan
/// when the inputs are the ones it was made for, else on the op's own kernel.
#[derive(Debug)]
pub(super) struct PreparedElementsUpdate {
    pub(super) op: ScatterElementsUpdate,
    pub(super) plan: ElementsPlan,
    pub(super) data_shape: Vec<usize>,
    /// The constants the plan was made from, compared by identity at run time.
    pub(super) indices: Value,
    pub(super) axis: Value,
    pub(super) updates: Option<Value>,
}

impl PreparedElementsUpdate {
    fn covers(&self, inputs: &[Value]) -> bool {
        let [data, indices, updates, axis] = inputs else {
            return false;
        };
        data.shape() == self.data_shape
            && Arc::ptr_eq(indices, &self.indices)
            && Arc::ptr_eq(axis, &self.axis)
            && updates.shape() == indices.shape()
            && self
                .updates
                .as_ref()
                .is_none_or(|u| Arc::ptr_eq(updates, u))
    }
}

impl Prepared for PreparedElementsUpdate {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let plan = self.covers(&inputs).then_some(&self.plan);
        self.op.eval_with(inputs, plan)
    }

    fn byte_size(&self) -> usize {
        self.plan.byte_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;
    use crate::testing::{eval_prepared, eval_with, f32s, i64s};
    use crate::Reduction;
    use irun_tensor::{ElementType, Storage};

    fn seu12(reduction: Reduction, use_init_val: bool) -> ScatterElementsUpdate {
        ScatterElementsUpdate {
            version: 12,
            reduction,
            use_init_val,
        }
    }

    /// Bit patterns, so that NaNs and signed zeros compare exactly.
    fn bits(t: &Tensor) -> Vec<u64> {
        match t.storage() {
            Storage::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            Storage::F16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            Storage::I32(v) => v.iter().map(|&x| x as u32 as u64).collect(),
            other => panic!("no bit view for {other:?}"),
        }
    }

    /// Indices with duplicates, negative values and every target hit, for an axis of `along`.
    fn indices(n: usize, along: usize) -> Vec<i64> {
        (0..n as i64)
            .map(|i| (i * 2_654_435_761) % along as i64 - (along / 2) as i64)
            .collect()
    }

    /// Data, indices and updates of one layout: (data shape, indices shape, axis).
    fn case(dshape: &[usize], ishape: &[usize], axis: usize, ty: ElementType) -> Vec<Tensor> {
        let n: usize = ishape.iter().product();
        let dn: usize = dshape.iter().product();
        let upd: Vec<f32> = (0..n).map(|i| (i % 11) as f32 * 0.75 - 3.0).collect();
        let data: Vec<f32> = (0..dn).map(|i| (i % 5) as f32).collect();
        let typed = |shape: &[usize], v: Vec<f32>| match ty {
            ElementType::F32 => f32s(shape, &v),
            ElementType::I32 => {
                Tensor::from_i32(shape.to_vec(), v.iter().map(|&x| x as i32).collect()).unwrap()
            }
            ElementType::F16 => Tensor::new(
                ElementType::F16,
                shape.to_vec(),
                Storage::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect()),
            )
            .unwrap(),
            _ => unreachable!(),
        };
        vec![
            typed(dshape, data),
            i64s(ishape, &indices(n, dshape[axis])),
            typed(ishape, upd),
            i64s(&[], &[axis as i64]),
        ]
    }

    /// The prepared kernel against the run-time one (itself tested against sequential loops)
    /// on one thread, bit for bit: layouts whose offsets are the targets, are not, and map
    /// smaller indices into data; constant updates (stored in plan order) and updates as an
    /// input (read through positions); one, two and three threads (one bucket, one per thread,
    /// and, with constant updates, as many as the output's size asks).
    #[test]
    fn prepared_kernel_agrees_with_the_run_time_kernel() {
        let n = PLAN_MIN_INDICES + 1001;
        let layouts: [(Vec<usize>, Vec<usize>, usize, ElementType); 4] = [
            (vec![3 << 16], vec![n], 0, ElementType::F32),
            (vec![1 << 12, 3], vec![n / 3, 3], 0, ElementType::I32),
            (vec![40, 5000], vec![40, n / 40], 1, ElementType::F32),
            (vec![70, 9000], vec![50, n / 50], 0, ElementType::F16),
        ];
        for (dshape, ishape, axis, ty) in layouts {
            let inputs = case(&dshape, &ishape, axis, ty);
            for (red, init) in [
                (Reduction::None, true),
                (Reduction::Sum, true),
                (Reduction::Max, false),
                (Reduction::Mean, false),
            ] {
                let op = seu12(red, init);
                let want = eval_with(&op, inputs.clone(), 1).unwrap();
                for constant in [[false, true, true, true], [false, true, false, true]] {
                    for threads in [1, 2, 3] {
                        let got = eval_prepared(&op, inputs.clone(), &constant, threads)
                            .expect("prepared")
                            .unwrap();
                        assert!(
                            bits(&got) == bits(&want),
                            "{dshape:?} {ishape:?} axis {axis} {red:?} constant {constant:?} threads {threads}"
                        );
                    }
                }
            }
        }
    }

    /// A run with other values than the constants the plan was made from (as the executor
    /// never does, but the contract allows) takes the op's own kernel.
    #[test]
    fn other_inputs_than_the_prepared_ones_take_the_run_time_kernel() {
        let n = PLAN_MIN_INDICES;
        let op = seu12(Reduction::Sum, true);
        let inputs = case(&[1 << 20], &[n], 0, ElementType::F32);
        let values: Vec<Value> = inputs.iter().cloned().map(Arc::new).collect();
        let facts: Vec<_> = values
            .iter()
            .map(|v| crate::Fact::of_static(v.element_type(), v.shape()))
            .collect();
        let constants: Vec<Option<Value>> = values.iter().cloned().map(Some).collect();
        let kernel = op.prepare(&facts, &constants).expect("prepared");
        let mut other = inputs.clone();
        other[2] = f32s(&[n], &vec![2.5; n]);
        other[1] = i64s(&[n], &indices(n, 1000));
        for changed in [1, 2] {
            let mut args = values.clone();
            args[changed] = Arc::new(other[changed].clone());
            let got = kernel.eval(args.clone()).unwrap().remove(0);
            let want = op.eval(args).unwrap().remove(0);
            assert!(bits(&got) == bits(&want), "input {changed} changed");
        }
    }

    /// No plan for indices out of range (the run reports them), for few indices, or for data
    /// of unknown shape.
    #[test]
    fn prepare_declines() {
        let op = seu12(Reduction::Sum, true);
        let all = [true, true, true, true];
        let mut bad = case(&[1000], &[PLAN_MIN_INDICES], 0, ElementType::F32);
        let mut idx = indices(PLAN_MIN_INDICES, 1000);
        idx[PLAN_MIN_INDICES - 1] = 1000;
        bad[1] = i64s(&[PLAN_MIN_INDICES], &idx);
        assert!(eval_prepared(&op, bad, &all, 2).is_none());
        let small = case(&[1000], &[PLAN_MIN_INDICES - 1], 0, ElementType::F32);
        assert!(eval_prepared(&op, small, &all, 2).is_none());

        let good = case(&[1000], &[PLAN_MIN_INDICES], 0, ElementType::F32);
        let values: Vec<Value> = good.into_iter().map(Arc::new).collect();
        let mut facts: Vec<_> = values
            .iter()
            .map(|v| crate::Fact::of_static(v.element_type(), v.shape()))
            .collect();
        facts[0] = crate::testing::fact(ElementType::F32, "?");
        let constants: Vec<Option<Value>> = values.iter().cloned().map(Some).collect();
        assert!(op.prepare(&facts, &constants).is_none());
    }
}
