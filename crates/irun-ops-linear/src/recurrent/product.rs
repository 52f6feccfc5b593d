//! The products of a recurrent pass, `c = a B^T` with `B [n, k]` prepared once for many:
//! the input product (`a` every position's input, `B` the W of a direction) and, every
//! step, the recurrent one (`a` the states `[m, k]`, `B` the stacked gate rows of R).
//! Constant weights are prepared when the model is compiled (`Op::prepare`).
//!
//! f32 with one batch row is a vector times a matrix, the whole cost of a batch-1 LSTM step:
//! R is laid out once in panels of 64 columns of `R^T` (`[n/64][k][64]`, each panel one
//! contiguous run that a task streams from start to end) and each panel's outputs sum
//! `h[p] R^T[p, ..]` over p in order, in registers (rten-gemm's GEMV splits its sums by
//! thread count, and the generic product re-read R with a horizontal sum per output: 6x
//! slower than OpenVINO on a 256-unit LSTM). Several rows: rten-gemm on R packed once (the
//! unprepared product packed 1 MB per step). f64: matrixmultiply as the linear ops use it.
//! Every output is computed by one task in one order, whatever the thread count.

use crate::gemm::{view, Mul, F32_GEMM};
use crate::par;
use crate::simd;
use rten_gemm::{GemmInputA, GemmInputB, GemmOptions, PackedBMatrix};

/// A float whose products with a fixed right operand can be prepared.
pub(crate) trait Product: Mul {
    type Prepared: Send + Sync + std::fmt::Debug;
    /// Prepares `B [n, k]` for products with `m` rows.
    fn prepare(b: &[Self], n: usize, k: usize, m: usize) -> Self::Prepared;
    /// Whether `prepared` serves products with `m` rows.
    fn serves(prepared: &Self::Prepared, m: usize) -> bool;
    /// `c [m, n] = a [m, k] B^T`.
    fn times(prepared: &Self::Prepared, a: &[Self], m: usize, c: &mut [Self]);
    /// Bytes `prepared` holds.
    fn byte_size(prepared: &Self::Prepared) -> usize;
}

pub(crate) enum PreparedF32 {
    /// `R^T` in panels of [`PANEL`] columns, `[n/PANEL][k][PANEL]`, the last one padded with
    /// zeros.
    Panels {
        panels: Vec<f32>,
        n: usize,
        k: usize,
    },
    Packed {
        packed: PackedBMatrix<f32>,
        n: usize,
        k: usize,
    },
    /// Nothing to multiply (`k` or `n` is 0): the product, n wide, is zeros.
    Empty { n: usize },
}

impl std::fmt::Debug for PreparedF32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PreparedF32::Panels { n, k, .. } => write!(f, "Panels({n}x{k})"),
            PreparedF32::Packed { n, k, .. } => write!(f, "Packed({n}x{k})"),
            PreparedF32::Empty { n } => write!(f, "Empty({n})"),
        }
    }
}

impl Product for f32 {
    type Prepared = PreparedF32;

    fn prepare(r: &[f32], n: usize, k: usize, m: usize) -> PreparedF32 {
        if n == 0 || k == 0 {
            return PreparedF32::Empty { n };
        }
        if m == 1 {
            PreparedF32::Panels {
                panels: panels(r, n, k),
                n,
                k,
            }
        } else {
            let packed = F32_GEMM.with(|e| e.prepack_b(view(k, n, r, (1, k as isize))));
            PreparedF32::Packed { packed, n, k }
        }
    }

    /// Panels serve one row; packed, several (rten-gemm's one-row product splits its sums
    /// by thread count).
    fn serves(prepared: &PreparedF32, m: usize) -> bool {
        match prepared {
            PreparedF32::Panels { .. } => m == 1,
            PreparedF32::Packed { .. } => m != 1,
            PreparedF32::Empty { .. } => true,
        }
    }

    fn byte_size(prepared: &PreparedF32) -> usize {
        match prepared {
            PreparedF32::Panels { panels, .. } => panels.len() * 4,
            // What rten-gemm packs: the matrix, rounded up to its panels.
            PreparedF32::Packed { n, k, .. } => n * k * 4,
            PreparedF32::Empty { .. } => 0,
        }
    }

    fn times(prepared: &PreparedF32, h: &[f32], m: usize, c: &mut [f32]) {
        match prepared {
            PreparedF32::Empty { n } => c[..m * n].fill(0.0),
            PreparedF32::Panels { panels, n, k } => {
                // One row (`m` is 1 by construction): whole panels split between tasks, each
                // always the same panels for a given split, so they stay in its cache.
                let (n, k) = (*n, *k);
                let grain = (crate::kernel::PAR_MIN_ELEMENTS / k).div_ceil(PANEL).max(1) * PANEL;
                par::for_each_split_mut(&mut c[..n], grain, &|start, out| {
                    simd::widest(
                        #[inline(always)]
                        || {
                            for (q, out) in out.chunks_mut(PANEL).enumerate() {
                                let panel = start / PANEL + q;
                                let values = &panels[panel * k * PANEL..][..k * PANEL];
                                panel_product(&h[..k], values, out)
                            }
                        },
                    )
                });
            }
            PreparedF32::Packed { packed, n, k } => F32_GEMM.with(|e| {
                e.gemm(
                    &mut c[..m * n],
                    GemmInputA::Unpacked(view(m, *k, h, (*k as isize, 1))),
                    GemmInputB::Packed(packed),
                    GemmOptions::default(),
                )
                .expect("shapes agree by construction")
            }),
        }
    }
}

/// Columns of one panel: four AVX-512 vectors, summed in registers.
const PANEL: usize = 64;

/// `r [n, k]` as panels of [`PANEL`] columns of `r^T`: panel q holds `r[q*PANEL + l][p]` at
/// `(q*k + p)*PANEL + l`. Written panel by panel, reading `PANEL` rows of r at a time.
fn panels(r: &[f32], n: usize, k: usize) -> Vec<f32> {
    let count = n.div_ceil(PANEL);
    let mut out = vec![0.0; count * k * PANEL];
    for (q, panel) in out.chunks_exact_mut(k * PANEL).enumerate() {
        for l in 0..PANEL.min(n - q * PANEL) {
            let row = &r[(q * PANEL + l) * k..][..k];
            for (p, &v) in row.iter().enumerate() {
                panel[p * PANEL + l] = v;
            }
        }
    }
    out
}

/// `out = h x panel` for one panel's columns (`out` may be shorter than the panel: the
/// last one's padding is not written): each column sums its k products in order from 0 by
/// fused multiply-adds.
#[inline(always)]
fn panel_product(h: &[f32], panel: &[f32], out: &mut [f32]) {
    let mut acc = [0f32; PANEL];
    for (&x, row) in h.iter().zip(panel.chunks_exact(PANEL)) {
        let row: &[f32; PANEL] = row.try_into().expect("a whole panel row");
        for (a, &y) in acc.iter_mut().zip(row) {
            *a = x.mul_add(y, *a);
        }
    }
    let w = out.len();
    out.copy_from_slice(&acc[..w]);
}

/// f64 keeps B as it is: matrixmultiply packs per product.
#[derive(Debug)]
pub(crate) struct PreparedF64 {
    b: Vec<f64>,
    n: usize,
    k: usize,
}

impl Product for f64 {
    type Prepared = PreparedF64;

    fn prepare(b: &[f64], n: usize, k: usize, _m: usize) -> PreparedF64 {
        PreparedF64 {
            b: b[..n * k].to_vec(),
            n,
            k,
        }
    }

    fn serves(_: &PreparedF64, _m: usize) -> bool {
        true
    }

    fn byte_size(prepared: &PreparedF64) -> usize {
        prepared.b.len() * 8
    }

    fn times(p: &PreparedF64, a: &[f64], m: usize, c: &mut [f64]) {
        f64::gemm(
            m,
            p.k,
            p.n,
            a,
            (p.k as isize, 1),
            &p.b,
            (1, p.k as isize),
            c,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both f32 preparations against the product written out in f64, at several widths
    /// (whole blocks and a tail) and at 1 and 2 threads, which give the same bits.
    #[test]
    fn prepared_products_match_the_definition() {
        for (m, n, k) in [(1, 200, 37), (1, 64, 5), (3, 70, 9), (1, 3, 4)] {
            let r: Vec<f32> = (0..n * k)
                .map(|i| ((i * 13) % 29) as f32 / 7.0 - 2.0)
                .collect();
            let h: Vec<f32> = (0..m * k)
                .map(|i| ((i * 5) % 11) as f32 / 3.0 - 1.5)
                .collect();
            let run = |threads: usize| {
                crate::testing::on_threads(threads, || {
                    let prepared = f32::prepare(&r, n, k, m);
                    let mut c = vec![f32::NAN; m * n];
                    f32::times(&prepared, &h, m, &mut c);
                    c
                })
            };
            let one = run(1);
            crate::testing::assert_same_bits(&run(2), &one, format!("m={m} n={n} k={k}"));
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| h[i * k + p] as f64 * r[j * k + p] as f64)
                        .sum();
                    let got = one[i * n + j] as f64;
                    assert!(
                        (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                        "{got} vs {want}"
                    );
                }
            }
        }
    }
}
