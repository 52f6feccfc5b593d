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

use irun_tensor::Tensor;

use super::geometry::{hit, Coords, Geometry};
use super::strategy::Tuning;
use crate::kernel::{try_zeroed, DisjointSlice, IndexValues};
use crate::reduce::{Combine, Elem};

/// The indices of one ScatterElementsUpdate, validated and grouped by output bucket.
#[derive(Debug)]
pub(super) struct ElementsPlan {
    /// The output offset of every entry; bucket `b` holds `bounds[b]..bounds[b + 1]`, and all
    /// its offsets are in `[b << shift, (b + 1) << shift)`.
    pub(super) offsets: Vec<u32>,
    /// Each entry's position in indices and updates. Empty when entries are in position order
    /// (one bucket) or when `sorted_updates` holds the updates in entry order.
    pub(super) positions: Vec<u32>,
    pub(super) bounds: Vec<usize>,
    /// The constant updates in entry order.
    pub(super) sorted_updates: Option<Tensor>,
}

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
            Some(_) => {
                threads.max(data_len.saturating_mul(elem_bytes) / Tuning::SORTED_BUCKET_BYTES)
            }
            None => threads,
        }
        .clamp(1, Tuning::PLAN_MAX_BUCKETS);
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
            let (out, counts) = (out.part(b), counts.part(b));
            // SAFETY (both loops): task `b` reaches only the offsets of bucket `b`, which
            // `build` sorted into bucket `b`'s range of the output; the buckets' ranges are
            // disjoint, so no element is reached by two tasks. `hit` checks the bounds.
            if self.positions.is_empty() {
                for (&off, &u) in offsets.iter().zip(&updates[entries]) {
                    unsafe { hit::<T, C, TRACK>(&out, &counts, init, off as usize, u) };
                }
            } else {
                for (&off, &p) in offsets.iter().zip(&self.positions[entries]) {
                    let u = updates[p as usize];
                    unsafe { hit::<T, C, TRACK>(&out, &counts, init, off as usize, u) };
                }
            }
        });
    }

    pub(super) fn byte_size(&self) -> usize {
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
