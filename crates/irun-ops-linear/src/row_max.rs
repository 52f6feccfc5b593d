//! A ReduceMax-1 over the rows of each matrix of a product's output (its dim -2), taken over
//! by the prepared MatMul before it ([`crate::op::Prepared::set_row_max`]). PointPillars'
//! pillar encoder multiplies `[P, 32, 9]` by `[9, 64]`, adds a bias, applies a ReLU and takes
//! the maximum over each pillar's 32 points: at 12,000 pillars the product is 98 MB, written
//! to memory and read back by the ReduceMax. Here each block of pillars is multiplied,
//! finished and folded while it is in cache, and only the maxima are written.
//!
//! The fold is ReduceMax's on f32 (`irun-ops-reduce`, `fold_extremes`): from the first row,
//! a value replaces the maximum so far when it is greater or NaN, so a NaN propagates and of
//! equal values (±0) the first stays. Over no rows at all the maximum is the lowest finite
//! value, as there. So the fused graph gives the unfused one's bits (the model tests compare
//! them).

use crate::kernel::PAR_MIN_ELEMENTS;
use crate::op::OpError;
use crate::{par, simd};

/// Product values a task computes and folds at a time (256 KiB of f32: still in L2 when the
/// fold reads them).
const BLOCK_ELEMENTS: usize = 1 << 16;

/// ReduceMax-1's step on f32: `x` replaces the maximum so far `a` when greater, or NaN.
#[inline(always)]
fn pick(a: f32, x: f32) -> f32 {
    if x > a || x.is_nan() {
        x
    } else {
        a
    }
}

/// The shape of the maxima of an output `shape` (rank 2 or more): without dim -2, or with it
/// 1 when `keep_dims`.
pub(crate) fn reduced_shape(shape: &[usize], keep_dims: bool) -> Vec<usize> {
    let mut s = shape.to_vec();
    let at = s.len() - 2;
    if keep_dims {
        s[at] = 1;
    } else {
        s.remove(at);
    }
    s
}

/// The maxima over each group of `m` consecutive rows of `n` values, for `groups` groups, as
/// `groups * n` values. `product(first_row, rows, scratch)` must leave rows `first_row ..
/// first_row + rows` of the (finished) product in `scratch`, `rows * n` values.
pub(crate) fn fold_groups(
    groups: usize,
    m: usize,
    n: usize,
    product: &(dyn Fn(usize, usize, &mut Vec<f32>) + Sync),
) -> Result<Vec<f32>, OpError> {
    let len = groups
        .checked_mul(n)
        .ok_or_else(|| OpError::new(crate::op::codes::MEMORY, "the maxima overflow memory"))?;
    if m == 0 || len == 0 {
        let mut out = crate::kernel::try_zeroed::<f32>(len)?;
        out.fill(f32::MIN);
        return Ok(out);
    }
    let group = m * n;
    let per_block = (BLOCK_ELEMENTS / group).max(1);
    // Tasks of at least PAR_MIN_ELEMENTS product values, whole blocks of groups.
    let grain = PAR_MIN_ELEMENTS
        .div_ceil(group)
        .max(1)
        .next_multiple_of(per_block)
        * n;
    par::build(len, grain, &|start, fill| {
        let mut scratch = Vec::new();
        let mut g = start / n;
        while fill.remaining() > 0 {
            let count = (fill.remaining() / n).min(per_block);
            product(g * m, count * m, &mut scratch);
            assert_eq!(scratch.len(), count * group, "product block size");
            for values in scratch.chunks_exact_mut(group) {
                let (acc, rows) = values.split_at_mut(n);
                simd::widest(
                    #[inline(always)]
                    || {
                        for row in rows.chunks_exact(n) {
                            simd::update_each(acc, row, pick);
                        }
                    },
                );
                fill.extend_from_slice(acc);
            }
            g += count;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a scalar fold: NaN in a few groups (first, middle, last row), ±0 ties in
    /// either order, -inf rows, many blocks over both threads; and no rows at all.
    #[test]
    fn folds_as_reduce_max_does() {
        let (groups, m, n) = (700, 5, 33);
        let mut v: Vec<f32> = (0..groups * m * n)
            .map(|i| ((i * 7919) % 1013) as f32 / 50.0 - 10.0)
            .collect();
        for (g, r) in [(3, 0), (40, 2), (699, 4)] {
            v[(g * m + r) * n + 5] = f32::NAN;
        }
        for r in 0..m {
            v[(10 * m + r) * n] = if r % 2 == 0 { 0.0 } else { -0.0 };
            v[(11 * m + r) * n] = if r % 2 == 0 { -0.0 } else { 0.0 };
            v[(12 * m + r) * n + 1] = f32::NEG_INFINITY;
        }
        let product = |first: usize, rows: usize, s: &mut Vec<f32>| {
            s.clear();
            s.extend_from_slice(&v[first * n..][..rows * n]);
        };
        let got = crate::testing::on_threads(2, || fold_groups(groups, m, n, &product).unwrap());
        for g in 0..groups {
            for j in 0..n {
                let want = (1..m).fold(v[g * m * n + j], |a, r| pick(a, v[(g * m + r) * n + j]));
                assert_eq!(
                    got[g * n + j].to_bits(),
                    want.to_bits(),
                    "group {g}, column {j}"
                );
            }
        }
        assert!(got[3 * n + 5].is_nan() && got[699 * n + 5].is_nan());
        assert_eq!(got[10 * n].to_bits(), 0f32.to_bits());
        assert_eq!(got[11 * n].to_bits(), (-0f32).to_bits());
        let empty = fold_groups(3, 0, 2, &|_, _, _: &mut Vec<f32>| unreachable!()).unwrap();
        assert_eq!(empty, vec![f32::MIN; 6]);
        assert_eq!(reduced_shape(&[4, 3, 2], false), vec![4, 2]);
        assert_eq!(reduced_shape(&[4, 3, 2], true), vec![4, 1, 2]);
    }
}
