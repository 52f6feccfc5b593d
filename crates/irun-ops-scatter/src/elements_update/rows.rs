//! Row scatters: indices whose every line of inner columns holds one value, as torch's
//! `scatter_add_(0, index.unsqueeze(1).expand(-1, d), src)` and `index_add_` write them (GCN,
//! GraphSAGE, GAT aggregations). Each such line moves a whole row of updates onto one output
//! row, so the work is a histogram of rows rather than of elements.
//!
//! Pass 1 (in parallel over contiguous parts of the lines) checks that each line is uniform,
//! validates its index and appends `(line, output row)` to the part's list for the output
//! row's bucket (buckets are equal ranges of output rows, each small enough to stay in
//! cache). Pass 2 (in parallel over buckets, each owning its rows of the output) applies each
//! bucket's lists in part order, a whole row at a time. So every element still receives its
//! updates in row-major order, whatever the thread count.
//!
//! Pass 1 writes nothing to the output: at the first line that is not uniform it gives up,
//! and the element-wise kernel runs instead.
//!
//! The indices may also come one per line, before the broadcast that torch's `expand` lowers
//! to (`line_indices`): then nothing is scanned, and the broadcast is never materialised.

use super::geometry::Geometry;
use super::kernel::ElementsKernel;
use super::strategy::Tuning;
use crate::kernel::try_zeroed;
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};

/// What pass 1 found in one part of the lines.
enum Pass1 {
    /// Per bucket, `(line, output row)` in line order.
    Lists(Vec<Vec<(u32, u32)>>),
    /// A line whose indices differ: not a row scatter.
    NotRows,
    /// The first line whose index is out of range.
    OutOfRange(OpError),
}

impl Geometry {
    /// Whether the shape is one the row path serves: data rows that the indices' inner
    /// columns map onto one to one, lines long enough, and line and row numbers that fit
    /// in 32 bits, for an output of `out_len` elements.
    pub(super) fn rows_apply(&self, out_len: usize) -> bool {
        self.inner_map.is_none()
            && self.outer_map.is_none()
            && self.data_inner == self.inner
            && self.inner >= Tuning::ROW_MIN_COLUMNS
            && self.outer * self.along <= u32::MAX as usize
            && out_len / self.inner <= u32::MAX as usize
    }
}

impl ElementsKernel<'_> {
    /// The row path, the mean's division included; `Ok(false)` (with the output untouched)
    /// when some line is not uniform.
    pub(super) fn run_rows<T: Elem, C: Combine<T>>(
        &self,
        out: &mut [T],
        updates: &[T],
    ) -> Result<bool, OpError> {
        let g = &self.geometry;
        let inner = g.inner;
        let lines = g.outer * g.along;
        let out_rows = out.len() / inner;
        let threads = par::threads();
        let row_bytes = std::mem::size_of_val(&out[..inner]);
        let buckets = threads
            .max((out_rows * row_bytes).div_ceil(Tuning::ROW_BUCKET_BYTES))
            .min(Tuning::ROW_MAX_BUCKETS)
            .min(out_rows.max(1));
        let rows_per_bucket = out_rows.div_ceil(buckets).max(1);
        let parts = if threads > 1 { threads * 2 } else { 1 }.min(lines.max(1));
        let bounds: Vec<usize> = (0..=parts).map(|p| p * lines / parts).collect();
        let pass1 = |p: usize| {
            let mut lists = vec![Vec::new(); buckets];
            for line in bounds[p]..bounds[p + 1] {
                let first = line * inner;
                let held = if self.line_indices {
                    line..line + 1
                } else {
                    first..first + inner
                };
                let Some(v) = self.indices.uniform(held) else {
                    return Pass1::NotRows;
                };
                let t = g.target(v);
                if t >= g.data_along {
                    return Pass1::OutOfRange(self.out_of_range(first, v));
                }
                let row = (line / g.along) * g.data_along + t;
                lists[row / rows_per_bucket].push((line as u32, row as u32));
            }
            Pass1::Lists(lists)
        };
        let found = par::try_map_tasks(parts, &|p| Ok(pass1(p)))?;
        if found.iter().any(|f| matches!(f, Pass1::NotRows)) {
            return Ok(false);
        }
        let mut parts_lists = Vec::with_capacity(parts);
        for f in found {
            match f {
                Pass1::Lists(l) => parts_lists.push(l),
                // Every line before it in row-major order is uniform and in range (parts are
                // in order, each stops at its first problem): the element-wise kernel would
                // report this index first too.
                Pass1::OutOfRange(e) => return Err(e),
                Pass1::NotRows => unreachable!("checked above"),
            }
        }
        // The hits of a row are the hits of each of its elements: counted once per row.
        let mut counts: Vec<u32> = if self.track_counts {
            try_zeroed(out_rows)?
        } else {
            Vec::new()
        };
        let span = rows_per_bucket * inner;
        let mut pieces: Vec<(&mut [T], &mut [u32])> = if self.track_counts {
            out.chunks_mut(span)
                .zip(counts.chunks_mut(rows_per_bucket))
                .collect()
        } else {
            out.chunks_mut(span).map(|o| (o, &mut [][..])).collect()
        };
        let (init, mean) = (self.use_init_val, self.mean);
        par::for_each_mut(&mut pieces, &|b, (dst, hits)| {
            let first_row = b * rows_per_bucket;
            for lists in &parts_lists {
                let list = &lists[b];
                for (k, &(line, row)) in list.iter().enumerate() {
                    // A bucket's updates are rows far apart in the updates (a GCN's edges:
                    // every 13th row of 256 bytes), which the hardware does not fetch ahead
                    // (GCN's two scatters: 28 to 22.5 ms).
                    if let Some(&(ahead, _)) = list.get(k + Tuning::ROW_AHEAD) {
                        let ahead = ahead as usize * inner;
                        irun_opkit::simd::prefetch_read(&updates[ahead..ahead + inner]);
                    }
                    let local = row as usize - first_row;
                    let src = &updates[line as usize * inner..][..inner];
                    let dst = &mut dst[local * inner..][..inner];
                    if let Some(k) = hits.get_mut(local) {
                        if *k == 0 && !init {
                            dst.fill(C::NEUTRAL);
                        }
                        *k += 1;
                    }
                    for (d, &u) in dst.iter_mut().zip(src) {
                        *d = C::apply(*d, u);
                    }
                }
            }
            if mean {
                let extra = u64::from(init);
                for (row, &k) in dst.chunks_mut(inner).zip(hits.iter()) {
                    if k > 0 {
                        row.iter_mut()
                            .for_each(|x| *x = x.div_count(u64::from(k) + extra));
                    }
                }
            }
        });
        Ok(true)
    }
}
