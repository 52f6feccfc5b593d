//! The matrix product every linear op runs on: `c = a x b` for one matrix. f32 on rten-gemm,
//! f64 on matrixmultiply (both pick AVX-512/AVX2/FMA kernels at run time), integers exact
//! with wrapping.

use irun_tensor::Scalar;

use crate::par;
use crate::simd;
use rten_gemm::{GemmExecutor, GemmInputA, GemmInputB, GemmOptions};
use rten_tensor::NdTensorView;

/// A scalar type the linear ops multiply.
pub trait Mul: Scalar {
    /// `c = a x b` for one matrix; strides in elements (row, column).
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: &[Self],
        sa: (isize, isize),
        b: &[Self],
        sb: (isize, isize),
        c: &mut [Self],
    );
}

impl Mul for f32 {
    /// rten-gemm: AVX-512 or FMA kernels chosen at run time; it packs both operands per call
    /// and splits the output tiles over the current pool (each element by one tile, so the
    /// result does not depend on the thread count).
    fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: &[f32],
        sa: (isize, isize),
        b: &[f32],
        sb: (isize, isize),
        c: &mut [f32],
    ) {
        if m == 0 || n == 0 {
            return;
        }
        let c = &mut c[..m * n];
        if k == 0 {
            c.fill(0.0);
            return;
        }
        if m * k * n <= SMALL_PRODUCT && sb.1 == 1 {
            small_f32(m, k, n, a, sa, b, sb, c);
            return;
        }
        if crate::narrow::suits(n, sa, sb) {
            crate::narrow::product(k, n, a, sa.0 as usize, b, sb.1 as usize, c);
            return;
        }
        if m == 1 || n == 1 {
            vector_product(m, k, n, a, sa, b, sb, c);
            return;
        }
        F32_GEMM.with(|g| {
            g.gemm(
                c,
                GemmInputA::Unpacked(view(m, k, a, sa)),
                GemmInputB::Unpacked(view(k, n, b, sb)),
                GemmOptions::default(),
            )
            .expect("shapes agree by construction")
        });
    }
}

/// Products of at most this many multiply-adds, with rows of b contiguous, run
/// [`small_f32`]: rten-gemm's packing and dispatch cost about half a microsecond a call, more
/// than such a product.
const SMALL_PRODUCT: usize = 8192;

/// rten-gemm's depth block for f32 (`1024 / size_of::<f32>()`): past it, an output is the
/// sum of one multiply-add chain per block, each from zero, added in turn, and so is
/// [`small_f32`]'s (one chain over all of k differed from the prepared product in 15 of a
/// [2, 352] x [352, 10] Linear's 20 outputs).
const RTEN_DEPTH_BLOCK: usize = 256;

/// Output columns below which [`small_f32`] sums each output in a register rather than
/// rows of outputs in memory.
const NARROW: usize = 8;

/// `c = a x b` by direct loops, for products too small to pack. Each product is a fused
/// multiply-add, as in rten-gemm's kernels and OpenVINO's, so a small product rounds as a
/// packed one of the same summation order does (separate multiply and add moved GCN's
/// outputs off OpenVINO's in the last digit), and each output sums its products in order, as
/// their kernels do. Run in [`simd::widest`], where `mul_add` is the FMA instruction
/// (elsewhere it is the exactly rounded library call: slower, same bits). The order does not
/// depend on the thread count.
#[allow(clippy::too_many_arguments)]
fn small_f32(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    sa: (isize, isize),
    b: &[f32],
    sb: (isize, isize),
    c: &mut [f32],
) {
    // Each row of c accumulates scaled rows of b (contiguous: the caller checked), which
    // vectorises along j while every element sums its k products in order from 0, as
    // rten-gemm's kernels do. (b given transposed goes to rten-gemm: copying it here cost
    // more than packing saved.)
    let row = sb.0 as usize;
    if n < NARROW {
        // A few columns (a squeeze-excitation 1x1 convolution on one position: n = 1): each
        // output's chain in a register. Through memory, every multiply-add waited for the
        // store of the one before it (20 us for 40 x 144); eight rows at a time, so that
        // eight independent chains hide the latency of each (7 us one at a time).
        const ROWS: usize = 8;
        let (sa0, sa1) = (sa.0 as usize, sa.1 as usize);
        simd::widest(
            #[inline(always)]
            || {
                for i0 in (0..m).step_by(ROWS) {
                    let rows = ROWS.min(m - i0);
                    for j in 0..n {
                        let mut total = [0f32; ROWS];
                        for d0 in (0..k).step_by(RTEN_DEPTH_BLOCK) {
                            let mut acc = [0f32; ROWS];
                            for p in d0..k.min(d0 + RTEN_DEPTH_BLOCK) {
                                let y = b[p * row + j];
                                for (r, acc) in acc.iter_mut().enumerate().take(rows) {
                                    *acc = a[(i0 + r) * sa0 + p * sa1].mul_add(y, *acc);
                                }
                            }
                            for (t, a) in total.iter_mut().zip(acc) {
                                *t = if d0 == 0 { a } else { *t + a };
                            }
                        }
                        for (r, &v) in total.iter().enumerate().take(rows) {
                            c[(i0 + r) * n + j] = v;
                        }
                    }
                }
            },
        );
        return;
    }
    simd::widest(
        #[inline(always)]
        || {
            // Depth blocks after the first are summed apart and added, as rten-gemm adds them.
            let mut block = if k > RTEN_DEPTH_BLOCK {
                vec![0f32; n]
            } else {
                Vec::new()
            };
            for (i, ci) in c.chunks_exact_mut(n).take(m).enumerate() {
                for d0 in (0..k).step_by(RTEN_DEPTH_BLOCK) {
                    let sums: &mut [f32] = if d0 == 0 { &mut *ci } else { &mut block };
                    sums.fill(0.0);
                    for p in d0..k.min(d0 + RTEN_DEPTH_BLOCK) {
                        let x = a[i * sa.0 as usize + p * sa.1 as usize];
                        for (o, &y) in sums.iter_mut().zip(&b[p * row..][..n]) {
                            *o = x.mul_add(y, *o);
                        }
                    }
                    if d0 > 0 {
                        for (o, &s) in ci.iter_mut().zip(&block) {
                            *o += s;
                        }
                    }
                }
            }
        },
    )
}

/// `c = a x b` when `m` or `n` is 1: every output is the dot product of a vector `u` (a's
/// one row, or b's one column) with a vector `v_t` (b's column t, or a's row t). Our own
/// loops rather than rten-gemm's GEMV, whose per-output order depends on how many threads
/// split the columns (MobileNetV3's classifier differed between 1 and 2 threads), and whose
/// packed kernel (for a prepared B) sums in yet another order. Here each output sums in one
/// fixed order whatever the split: 32 interleaved partial sums along k where `v_t` is
/// contiguous, else products in order with every output of a k step at once.
#[allow(clippy::too_many_arguments)]
fn vector_product(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    sa: (isize, isize),
    b: &[f32],
    sb: (isize, isize),
    c: &mut [f32],
) {
    // (outputs, u, u's stride, v, offset between successive v_t, v_t's stride along k)
    let (count, u, us, v, v_step, vs) = if n == 1 {
        (m, b, sb.0 as usize, a, sa.0 as usize, sa.1 as usize)
    } else {
        (n, a, sa.1 as usize, b, sb.1 as usize, sb.0 as usize)
    };
    let u: Vec<f32> = (0..k).map(|p| u[p * us]).collect();
    let c = &mut c[..count];
    let grain = (crate::kernel::PAR_MIN_ELEMENTS / k.max(1)).max(16);
    par::for_each_split_mut(c, grain, &|start, out| {
        simd::widest(
            #[inline(always)]
            || {
                if vs == 1 {
                    for (t, o) in out.iter_mut().enumerate() {
                        let vt = &v[(start + t) * v_step..][..k];
                        *o = dot32(&u, vt);
                    }
                } else {
                    // v_t runs across t: for each k step, every output of the block at once.
                    out.fill(0.0);
                    for (p, &x) in u.iter().enumerate() {
                        let row = &v[p * vs + start * v_step..];
                        if v_step == 1 {
                            // Contiguous: the compiler vectorises this form, not the
                            // strided one (an attention step's probabilities times V ran a
                            // scalar multiply-add a value).
                            let len = out.len();
                            for (o, &r) in out.iter_mut().zip(&row[..len]) {
                                *o = x.mul_add(r, *o);
                            }
                        } else {
                            for (t, o) in out.iter_mut().enumerate() {
                                *o = x.mul_add(row[t * v_step], *o);
                            }
                        }
                    }
                }
            },
        )
    });
}

/// `x . y` in 32 interleaved partial sums (fused multiply-adds: independent chains, so the
/// loop is not bound by one chain's latency), combined pairwise, then the tail in order.
/// Where the CPU has AVX2 and FMA the lanes are four vector registers ([`dot32_avx2`]; the
/// compiler's own vectorisation of the loop below moved two floats at a time through the
/// stack, at half the speed); the sums are the same either way.
#[inline(always)]
pub(crate) fn dot32(x: &[f32], y: &[f32]) -> f32 {
    const LANES: usize = 32;
    let n = x.len().min(y.len()) / LANES * LANES;
    #[cfg(target_arch = "x86_64")]
    let acc = if simd::unit() != simd::Unit::Baseline {
        // SAFETY: `unit()` found AVX2 and FMA on this CPU (AVX-512 implies both).
        unsafe { dot32_avx2(&x[..n], &y[..n]) }
    } else {
        dot32_lanes(&x[..n], &y[..n])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let acc = dot32_lanes(&x[..n], &y[..n]);
    fold32(acc, &x[n..], &y[n..])
}

/// [`dot32`]'s end: its 32 lane sums added pairwise (lane `l` gets lane `l + width` for
/// widths 16, 8, 4, 2, 1), then the products of the tails `x`, `y` (under 32 values) added in
/// order by fused multiply-adds.
#[inline(always)]
pub(crate) fn fold32(mut acc: [f32; 32], x: &[f32], y: &[f32]) -> f32 {
    let mut width = 32;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    fma_chain(acc[0], x, y)
}

/// `sum` plus the products of `x` and `y` added in order, each by a fused multiply-add:
/// [`dot32`]'s tail, and the whole of it for fewer than 32 values (its lanes then add up to
/// +0).
#[inline(always)]
pub(crate) fn fma_chain(mut sum: f32, x: &[f32], y: &[f32]) -> f32 {
    for (x, y) in x.iter().zip(y) {
        sum = x.mul_add(*y, sum);
    }
    sum
}

/// The 32 lanes of [`dot32`] over whole steps of 32: lane `l` is the fused sum of
/// `x[32 i + l] * y[32 i + l]` in order of `i`.
#[inline(always)]
fn dot32_lanes(x: &[f32], y: &[f32]) -> [f32; 32] {
    let mut acc = [0f32; 32];
    for (x, y) in x.chunks_exact(32).zip(y.chunks_exact(32)) {
        for l in 0..32 {
            acc[l] = x[l].mul_add(y[l], acc[l]);
        }
    }
    acc
}

/// [`dot32_lanes`] in four AVX2 registers of eight lanes (register `j` holds lanes
/// `8 j..8 j + 8`), bit for bit the same sums.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot32_avx2(x: &[f32], y: &[f32]) -> [f32; 32] {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_setzero_ps(); 4];
    for (x, y) in x.chunks_exact(32).zip(y.chunks_exact(32)) {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: `x` and `y` are whole chunks of 32, so lanes 8 j..8 j + 8 (j < 4)
            // are inside them; the loads are unaligned.
            let (xv, yv) = unsafe {
                (
                    _mm256_loadu_ps(x.as_ptr().add(8 * j)),
                    _mm256_loadu_ps(y.as_ptr().add(8 * j)),
                )
            };
            *a = _mm256_fmadd_ps(xv, yv, *a);
        }
    }
    let mut out = [0f32; 32];
    for (j, a) in acc.iter().enumerate() {
        // SAFETY: `out` has 32 lanes, so 8 j..8 j + 8 (j < 4) is inside it.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * j), *a) };
    }
    out
}

#[cfg(test)]
mod dot_tests {
    use super::*;

    /// The vector lanes give exactly the portable lanes' sums, on lengths with and without
    /// a tail, for values whose rounding depends on the order.
    #[test]
    fn the_vector_lanes_sum_as_the_portable_ones() {
        for len in [0usize, 5, 32, 64, 100, 513, 4096] {
            let x: Vec<f32> = (0..len)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 1.37e-3)
                .collect();
            let y: Vec<f32> = (0..len)
                .map(|i| ((i * 53 % 97) as f32 - 40.0) * 7.1e2)
                .collect();
            let n = len / 32 * 32;
            let want = dot32_lanes(&x[..n], &y[..n]);
            #[cfg(target_arch = "x86_64")]
            if simd::unit() != simd::Unit::Baseline {
                // SAFETY: the unit check above found AVX2 and FMA.
                let got = unsafe { dot32_avx2(&x[..n], &y[..n]) };
                let bits = |v: [f32; 32]| v.map(f32::to_bits);
                assert_eq!(bits(got), bits(want), "length {len}");
            }
            let plain: f32 = {
                let mut acc = want;
                let mut width = 32;
                while width > 1 {
                    width /= 2;
                    for l in 0..width {
                        acc[l] += acc[l + width];
                    }
                }
                x[n..]
                    .iter()
                    .zip(&y[n..])
                    .fold(acc[0], |s, (a, b)| a.mul_add(*b, s))
            };
            assert_eq!(dot32(&x, &y).to_bits(), plain.to_bits(), "length {len}");
        }
    }
}

thread_local! {
    /// The f32 GEMM of this thread (the executor is not `Sync`); built once per thread, when
    /// it probes the CPU's features.
    pub static F32_GEMM: GemmExecutor<f32> = GemmExecutor::default();
}

/// A strided `rows x cols` view of `data`: rten-tensor checks that it fits and does not
/// overlap, which the callers' strides guarantee.
pub fn view(rows: usize, cols: usize, data: &[f32], s: (isize, isize)) -> NdTensorView<'_, f32, 2> {
    NdTensorView::from_data_with_strides(
        [rows, cols],
        &data[..reach(rows, cols, s)],
        [s.0 as usize, s.1 as usize],
    )
    .expect("the callers' strides stay inside their slices and never overlap")
}

impl Mul for f64 {
    fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: &[f64],
        sa: (isize, isize),
        b: &[f64],
        sb: (isize, isize),
        c: &mut [f64],
    ) {
        if m == 0 || n == 0 {
            return;
        }
        assert!(a.len() >= reach(m, k, sa) && b.len() >= reach(k, n, sb) && c.len() >= m * n);
        // SAFETY: as for f32.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                sa.0,
                sa.1,
                b.as_ptr(),
                sb.0,
                sb.1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
}

macro_rules! int_mul {
    ($($t:ty),*) => {$(
        impl Mul for $t {
            fn gemm(m: usize, k: usize, n: usize, a: &[$t], sa: (isize, isize), b: &[$t], sb: (isize, isize), c: &mut [$t]) {
                for i in 0..m {
                    for j in 0..n {
                        let mut acc: $t = 0;
                        for p in 0..k {
                            let x = a[(i as isize * sa.0 + p as isize * sa.1) as usize];
                            let y = b[(p as isize * sb.0 + j as isize * sb.1) as usize];
                            acc = acc.wrapping_add(x.wrapping_mul(y));
                        }
                        c[i * n + j] = acc;
                    }
                }
            }
        }
    )*};
}
int_mul!(i8, i16, i32, i64, u8, u16, u32, u64);

/// One past the largest offset a `rows x cols` matrix at non-negative strides `s` touches.
pub fn reach(rows: usize, cols: usize, s: (isize, isize)) -> usize {
    if rows == 0 || cols == 0 {
        return 0;
    }
    (rows - 1) * s.0 as usize + (cols - 1) * s.1 as usize + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product by its definition, in f64.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        m: usize,
        k: usize,
        n: usize,
        a: &[f32],
        sa: (isize, isize),
        b: &[f32],
        sb: (isize, isize),
    ) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                for p in 0..k {
                    let x = a[i * sa.0 as usize + p * sa.1 as usize] as f64;
                    let y = b[p * sb.0 as usize + j * sb.1 as usize] as f64;
                    c[i * n + j] += x * y;
                }
            }
        }
        c
    }

    /// The strides of `a` (m x k) and `b` (k x n) in the four layouts, each transposed or not:
    /// `(ta, tb, sa, sb)`.
    fn layouts(
        m: usize,
        k: usize,
        n: usize,
    ) -> impl Iterator<Item = (bool, bool, (isize, isize), (isize, isize))> {
        [false, true].into_iter().flat_map(move |ta| {
            [false, true].into_iter().map(move |tb| {
                let sa = if ta { (1, m as isize) } else { (k as isize, 1) };
                let sb = if tb { (1, k as isize) } else { (n as isize, 1) };
                (ta, tb, sa, sb)
            })
        })
    }

    /// Small products round as rten-gemm does: bit for bit its result in every layout (the
    /// direct loops sum products in order with fused multiply-adds), on inexact values.
    #[test]
    fn small_products_equal_rten_gemm_bit_for_bit() {
        // Narrow ones (n < 8) sum each output in a register, eight rows at a time: 40 x 144
        // into one column is a squeeze-excitation layer on one position.
        let shapes = [
            (3, 5, 2),
            (9, 32, 9),
            (4, 13, 7),
            (2, 7, 3),
            (16, 27, 16),
            (40, 144, 1),
            (11, 60, 5),
            // Past rten-gemm's depth block of 256: chains per block, added.
            (2, 352, 10),
            (3, 600, 4),
        ];
        for &(m, k, n) in &shapes {
            let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.73).cos()).collect();
            for (ta, tb, sa, sb) in layouts(m, k, n) {
                if (n == 1 && tb) || crate::narrow::suits(n, sa, sb) {
                    // A column of b not contiguous: a vector product, in its own order; a
                    // few columns of b contiguous along k: dot products (`narrow.rs`).
                    continue;
                }
                let mut small = vec![f32::NAN; m * n];
                f32::gemm(m, k, n, &a, sa, &b, sb, &mut small);
                let mut packed = vec![f32::NAN; m * n];
                F32_GEMM.with(|g| {
                    g.gemm(
                        &mut packed,
                        GemmInputA::Unpacked(view(m, k, &a, sa)),
                        GemmInputB::Unpacked(view(k, n, &b, sb)),
                        GemmOptions::default(),
                    )
                    .unwrap()
                });
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&small), bits(&packed), "{m}x{k}x{n} ta={ta} tb={tb}");
            }
        }
    }

    /// A vector times a matrix whose rows run along the outputs (an attention step's
    /// probabilities times V: 1 x 1000 by 1000 x 64) sums each output's products in order,
    /// bit for bit, whether the rows are contiguous (the vectorised form) or strided.
    #[test]
    fn a_vector_times_rows_sums_each_output_in_order() {
        let (k, n) = (1000, 64);
        let a: Vec<f32> = (0..k).map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0).collect();
        let b: Vec<f32> = (0..2 * k * n)
            .map(|i| ((i * 5 % 13) as f32 - 6.0) / 7.0)
            .collect();
        for step in [1usize, 2] {
            let sb = ((n * step) as isize, step as isize);
            let mut c = vec![f32::NAN; n];
            f32::gemm(1, k, n, &a, (k as isize, 1), &b, sb, &mut c);
            for (t, got) in c.iter().enumerate() {
                let want = (0..k).fold(0f32, |o, p| a[p].mul_add(b[p * n * step + t * step], o));
                assert_eq!(got.to_bits(), want.to_bits(), "step {step}, output {t}");
            }
        }
    }

    /// Every layout (a and b each transposed or not) of the small products, the packed path
    /// just above the threshold, a matrix times a vector and a vector times a matrix (lengths
    /// that are not multiples of its 32 partial sums), against an f64 reference.
    #[test]
    fn small_and_packed_products_match_the_definition_in_every_layout() {
        let shapes = [
            (1, 1, 1),
            (3, 5, 2),
            (9, 32, 9),
            (4, 13, 7),
            (2, 7, 1),
            (20, 20, 21),
            (300, 40, 1),
            (1, 100, 200),
        ];
        for &(m, k, n) in &shapes {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0)
                .collect();
            for (ta, tb, sa, sb) in layouts(m, k, n) {
                let mut c = vec![f32::NAN; m * n];
                f32::gemm(m, k, n, &a, sa, &b, sb, &mut c);
                let want = reference(m, k, n, &a, sa, &b, sb);
                for (got, want) in c.iter().zip(&want) {
                    assert!(
                        (*got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
                        "{m}x{k}x{n} ta={ta} tb={tb}: {got} vs {want}"
                    );
                }
            }
        }
        const {
            assert!(
                20 * 20 * 21 > SMALL_PRODUCT,
                "(20, 20, 21) takes the packed path"
            )
        };
        const {
            assert!(
                300 * 40 > SMALL_PRODUCT,
                "(300, 40, 1) the matrix-vector one"
            )
        };
    }
}
