//! Products with a handful of output columns whose operands both run along the inner dim: a
//! Linear layer of a few outputs (`[rows, k] x [n, k]ᵀ`, a detector head's 4 class scores or
//! 6 affine parameters from 1568 features), or a batch of tiny `[49, 3] x [2, 3]ᵀ` products.
//! A GEMM pads such a B to its register tile (32 columns on AVX-512) and packs both operands
//! per call: a detector head's `[100, 1568] x [6, 1568]ᵀ` took 0.05 ms, five times its
//! multiply-adds at the load rate. Here each output is one dot product of a row of A with a
//! column of B.
//!
//! Each output is exactly [`dot32`] of its row and its column, as the vector product of
//! `gemm.rs` computes a row of one (`m == 1`) or a column of one (`n == 1`): the bits do not
//! depend on how many rows are computed together, nor on the thread count.

use crate::gemm::{dot32, fma_chain, fold32};
use crate::simd;

/// The most output columns taken: eight pairs of AVX-512 accumulators stay in registers with
/// the row's two vectors.
pub(crate) const MAX_COLS: usize = 8;

/// Whether a `[m, k] x [k, n]` product with these strides (row, column; in elements) is one
/// for [`product`]: 2 to [`MAX_COLS`] columns, A's rows and B's columns contiguous.
pub(crate) fn suits(n: usize, sa: (isize, isize), sb: (isize, isize)) -> bool {
    (2..=MAX_COLS).contains(&n) && sa.1 == 1 && sb.0 == 1
}

/// `c[i][j]` = [`dot32`] of A's row `i` (at `a[i * a_row ..][.. k]`) and B's column `j` (at
/// `b[j * b_col ..][.. k]`), for `i < c.len() / n`, `j < n`.
pub(crate) fn product(
    k: usize,
    n: usize,
    a: &[f32],
    a_row: usize,
    b: &[f32],
    b_col: usize,
    c: &mut [f32],
) {
    let m = c.len() / n;
    assert!(
        (1..=MAX_COLS).contains(&n)
            && c.len() == m * n
            && (m == 0 || a.len() >= (m - 1) * a_row + k)
            && b.len() >= (n - 1) * b_col + k,
        "narrow product out of bounds"
    );
    let columns: [&[f32]; MAX_COLS] =
        std::array::from_fn(|j| if j < n { &b[j * b_col..][..k] } else { &[] });
    #[cfg(target_arch = "x86_64")]
    let wide = crate::avx512f();
    // Compiled for the widest unit: `mul_add` is then the FMA instruction.
    simd::widest(
        #[inline(always)]
        || {
            for (i, ci) in c.chunks_exact_mut(n).enumerate() {
                let row = &a[i * a_row..][..k];
                if k < 32 {
                    // No whole step of 32: `dot32` is the tail's chain from 0 (its lanes
                    // add up to +0), here without the lanes (a [49, 3] x [2, 3]ᵀ batch of
                    // 100 spent 8 ns an output on them).
                    for (o, column) in ci.iter_mut().zip(&columns) {
                        *o = fma_chain(0.0, row, column);
                    }
                    continue;
                }
                #[cfg(target_arch = "x86_64")]
                if wide {
                    // SAFETY: AVX-512F was found on this CPU; `row` and every column hold
                    // `k` values; `ci` has `n` outputs, one a column.
                    unsafe { avx512::dots(row, &columns[..n], ci) };
                    continue;
                }
                for (o, column) in ci.iter_mut().zip(&columns) {
                    *o = dot32(row, column);
                }
            }
        },
    )
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::fold32;
    use std::arch::x86_64::*;

    /// `out[j]` = [`super::dot32`]`(x, ys[j])`: the 32 lanes of every column summed at once,
    /// lanes 0-15 in one register and 16-31 in the next, each row vector loaded once.
    ///
    /// # Safety
    /// AVX-512F must be available; every `ys[j]` must hold `x.len()` values; `out.len()` must
    /// equal `ys.len()`, at most `MAX_COLS`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn dots(x: &[f32], ys: &[&[f32]], out: &mut [f32]) {
        match ys.len() {
            1 => dots_of::<1>(x, ys, out),
            2 => dots_of::<2>(x, ys, out),
            3 => dots_of::<3>(x, ys, out),
            4 => dots_of::<4>(x, ys, out),
            5 => dots_of::<5>(x, ys, out),
            6 => dots_of::<6>(x, ys, out),
            7 => dots_of::<7>(x, ys, out),
            _ => dots_of::<8>(x, ys, out),
        }
    }

    /// [`dots`] for `N` columns.
    ///
    /// # Safety
    /// As [`dots`], with `ys.len() == out.len() == N`.
    #[target_feature(enable = "avx512f")]
    unsafe fn dots_of<const N: usize>(x: &[f32], ys: &[&[f32]], out: &mut [f32]) {
        let k = x.len();
        let whole = k / 32 * 32;
        assert!(ys.len() == N && out.len() == N && ys.iter().all(|y| y.len() == k));
        let mut acc = [[_mm512_setzero_ps(); 2]; N];
        for p in (0..whole).step_by(32) {
            // SAFETY: `p + 32 <= whole <= k`, the length of `x` and of every `ys[j]`.
            unsafe {
                let x0 = _mm512_loadu_ps(x.as_ptr().add(p));
                let x1 = _mm512_loadu_ps(x.as_ptr().add(p + 16));
                for (a, y) in acc.iter_mut().zip(ys) {
                    a[0] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(y.as_ptr().add(p)), a[0]);
                    a[1] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(y.as_ptr().add(p + 16)), a[1]);
                }
            }
        }
        for ((o, a), y) in out.iter_mut().zip(&acc).zip(ys) {
            let mut lanes = [0f32; 32];
            // SAFETY: `lanes` holds 32 values: 0-15 and 16-31.
            unsafe {
                _mm512_storeu_ps(lanes.as_mut_ptr(), a[0]);
                _mm512_storeu_ps(lanes.as_mut_ptr().add(16), a[1]);
            }
            *o = fold32(lanes, &x[whole..], &y[whole..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 37 + seed * 11) % 101) as f32 - 50.0) * 1.37e-2)
            .collect()
    }

    /// Every output is `dot32` of its row and column, bit for bit, with and without a tail
    /// and below one step of 32, for every column count taken.
    #[test]
    fn each_output_is_the_dot_product_of_its_row_and_column() {
        for k in [1usize, 3, 31, 32, 100, 1568] {
            for n in 1..=MAX_COLS {
                let m = 5;
                let (a_row, b_col) = (k + 3, k + 1);
                let a = values(m * a_row, 1);
                let b = values(n * b_col, 2);
                let mut c = vec![f32::NAN; m * n];
                product(k, n, &a, a_row, &b, b_col, &mut c);
                for i in 0..m {
                    for j in 0..n {
                        let want = dot32(&a[i * a_row..][..k], &b[j * b_col..][..k]);
                        assert_eq!(
                            c[i * n + j].to_bits(),
                            want.to_bits(),
                            "k {k} n {n} [{i}, {j}]"
                        );
                    }
                }
            }
        }
    }
}
