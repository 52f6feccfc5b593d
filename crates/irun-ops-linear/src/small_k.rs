//! Products by a constant B whose inner dim is a handful of values: PointPillars' pillar
//! layer multiplies 384,000 rows of 9 features into 64 channels. A general GEMM spends such
//! a product packing and unpacking panels for 9 multiply-adds an output (rten-gemm took
//! 11.7 ms of the model's 75, writing 98 MB); here each row is one register tile of up to
//! 8 vectors of outputs, each input value broadcast against a row of B kept in L1.
//!
//! Each output is the chain of fused multiply-adds over the inner dim in order from 0, as
//! rten-gemm computes it for an inner dim this short, so prepared and run-time products give
//! the same bits (the op's tests compare them).

use irun_opkit::epilogue::Activation;

/// The longest inner dim taken: 16 products an output.
const MAX_K: usize = 16;
/// The widest output row taken: 8 vectors.
const MAX_N: usize = 128;

/// B as `[k][n]` rows of `n` values.
#[derive(Debug)] // at most 16 x 128 values
pub(crate) struct SmallK {
    k: usize,
    n: usize,
    b: Vec<f32>,
}

impl SmallK {
    /// B (`[k, n]`, or `[n, k]` when `transposed`) when the CPU and the shape suit: AVX-512,
    /// `k <= 16`, `n` a multiple of 16 up to 128.
    pub(crate) fn new(b: &[f32], k: usize, n: usize, transposed: bool) -> Option<SmallK> {
        let fits = crate::avx512f()
            && (1..=MAX_K).contains(&k)
            && n.is_multiple_of(16)
            && (16..=MAX_N).contains(&n)
            && b.len() == k * n;
        if !fits {
            return None;
        }
        let b = if transposed {
            (0..k)
                .flat_map(|p| (0..n).map(move |j| b[j * k + p]))
                .collect()
        } else {
            b.to_vec()
        };
        Some(SmallK { k, n, b })
    }

    /// `out[r][j]` = the sum over `p` in order of `a[r][p] * b[p][j]`, by fused
    /// multiply-adds from 0, for the rows of `a` (`[rows][k]`) into `out` (`[rows][n]`).
    pub(crate) fn rows(&self, a: &[f32], out: &mut [f32]) {
        let rows = out.len() / self.n;
        assert!(
            out.len() == rows * self.n
                && a.len() >= rows * self.k
                && self.b.len() == self.k * self.n,
            "small-k product out of bounds"
        );
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` made this only where AVX-512F holds, with `n` a multiple of 16 up
        // to MAX_N; the assert bounds the reads of `a` (`r * k + p`, r < rows, p < k) and
        // `b` (`p * n + j`) and the writes of `out` (`r * n + j`, j < n).
        unsafe {
            let (a, b, o) = (a.as_ptr(), self.b.as_ptr(), out.as_mut_ptr());
            match self.n / 16 {
                1 => avx512::rows::<1>(a, b, self.k, rows, o),
                2 => avx512::rows::<2>(a, b, self.k, rows, o),
                3 => avx512::rows::<3>(a, b, self.k, rows, o),
                4 => avx512::rows::<4>(a, b, self.k, rows, o),
                5 => avx512::rows::<5>(a, b, self.k, rows, o),
                6 => avx512::rows::<6>(a, b, self.k, rows, o),
                7 => avx512::rows::<7>(a, b, self.k, rows, o),
                _ => avx512::rows::<8>(a, b, self.k, rows, o),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("SmallK::new returns None off x86_64");
    }
}

impl SmallK {
    /// The maxima over each group of `m` rows of the finished product (ReduceMax over dim
    /// -2, `row_max.rs`) for the rows of `a`, `out.len() / n` groups: each row's sums as
    /// [`Self::rows`] makes them, plus `bias[j]` (one per column, or none), through
    /// `activation`, then folded into the group's maxima in order, all in registers: the
    /// product, which at PointPillars' size is 98 MB, is neither stored nor read back.
    pub(crate) fn row_maxima(
        &self,
        a: &[f32],
        m: usize,
        (bias, activation): (Option<&[f32]>, Activation),
        out: &mut [f32],
    ) {
        let groups = out.len() / self.n;
        assert!(
            m > 0
                && out.len() == groups * self.n
                && a.len() >= groups * m * self.k
                && bias.is_none_or(|b| b.len() == self.n)
                && self.b.len() == self.k * self.n,
            "small-k maxima out of bounds"
        );
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` made this only where AVX-512F holds, with `n` a multiple of 16 up
        // to MAX_N; the assert bounds the reads of `a` (`(g * m + r) * k + p`), `b`
        // (`p * n + j`) and `bias` (`j < n`) and the writes of `out` (`g * n + j`).
        unsafe {
            let (a, b, o) = (a.as_ptr(), self.b.as_ptr(), out.as_mut_ptr());
            let bias = bias.map(<[f32]>::as_ptr);
            let f = (bias, activation);
            match self.n / 16 {
                1 => avx512::row_maxima::<1>(a, b, self.k, (groups, m), f, o),
                2 => avx512::row_maxima::<2>(a, b, self.k, (groups, m), f, o),
                3 => avx512::row_maxima::<3>(a, b, self.k, (groups, m), f, o),
                4 => avx512::row_maxima::<4>(a, b, self.k, (groups, m), f, o),
                5 => avx512::row_maxima::<5>(a, b, self.k, (groups, m), f, o),
                6 => avx512::row_maxima::<6>(a, b, self.k, (groups, m), f, o),
                7 => avx512::row_maxima::<7>(a, b, self.k, (groups, m), f, o),
                _ => avx512::row_maxima::<8>(a, b, self.k, (groups, m), f, o),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("SmallK::new returns None off x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use crate::lanes_epilogue::{activate, max_step};
    use irun_opkit::epilogue::Activation;
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `a` readable at `0 .. groups * m * k`, `b` at
    /// `0 .. k * 16V`, `bias` (if any) at `0 .. 16V`, `out` writable at `0 .. groups * 16V`;
    /// `m > 0`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn row_maxima<const V: usize>(
        a: *const f32,
        b: *const f32,
        k: usize,
        (groups, m): (usize, usize),
        (bias, activation): (Option<*const f32>, Activation),
        out: *mut f32,
    ) {
        let bias: Option<[__m512; V]> =
            bias.map(|p| std::array::from_fn(|v| _mm512_loadu_ps(p.add(16 * v))));
        for g in 0..groups {
            let mut best = [_mm512_setzero_ps(); V];
            for r in 0..m {
                let ar = a.add((g * m + r) * k);
                let mut acc = [_mm512_setzero_ps(); V];
                for p in 0..k {
                    let x = _mm512_set1_ps(*ar.add(p));
                    let bp = b.add(p * 16 * V);
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm512_fmadd_ps(x, _mm512_loadu_ps(bp.add(16 * v)), *acc);
                    }
                }
                for (v, (acc, best)) in acc.iter().zip(best.iter_mut()).enumerate() {
                    let mut y = *acc;
                    if let Some(bias) = &bias {
                        y = _mm512_add_ps(y, bias[v]);
                    }
                    y = activate(activation, y);
                    *best = if r == 0 { y } else { max_step(*best, y) };
                }
            }
            let og = out.add(g * 16 * V);
            for (v, best) in best.iter().enumerate() {
                _mm512_storeu_ps(og.add(16 * v), *best);
            }
        }
    }

    /// # Safety
    /// AVX-512F must be available; `a` readable at `0 .. rows * k`, `b` at `0 .. k * 16V`,
    /// `out` writable at `0 .. rows * 16V`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn rows<const V: usize>(
        a: *const f32,
        b: *const f32,
        k: usize,
        rows: usize,
        out: *mut f32,
    ) {
        for r in 0..rows {
            let ar = a.add(r * k);
            let mut acc = [_mm512_setzero_ps(); V];
            for p in 0..k {
                let x = _mm512_set1_ps(*ar.add(p));
                let bp = b.add(p * 16 * V);
                for (v, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(x, _mm512_loadu_ps(bp.add(16 * v)), *acc);
                }
            }
            let or = out.add(r * 16 * V);
            for (v, acc) in acc.iter().enumerate() {
                _mm512_storeu_ps(or.add(16 * v), *acc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::epilogue::{Channels, Epilogue};

    /// The maxima in registers against the stored rows finished by `Epilogue::apply_at` and
    /// folded by ReduceMax's step, bit for bit: NaN rows, ±0 ties (ReLU's +0 against the
    /// input's -0 passed through by no activation), every activation, with and without a
    /// bias, several vector counts.
    #[test]
    ///
    /// Without AVX-512 there is no such kernel (`SmallK::new` is `None`), and the prepared
    /// MatMul folds its finished GEMM rows with `row_max::fold_groups`: that path is checked
    /// on the same data against the same rule instead.
    fn maxima_in_registers_equal_the_stored_rows_folded() {
        let small_k = crate::avx512f();
        eprintln!(
            "row maxima path: {}",
            if small_k {
                "small-k kernel in registers (AVX-512)"
            } else {
                "GEMM rows folded by row_max::fold_groups (no AVX-512)"
            }
        );
        let (k, m, groups) = (9, 6, 13);
        for n in [16, 64, 128] {
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let mut a: Vec<f32> = (0..groups * m * k)
                .map(|i| ((i * 7919) % 211) as f32 / 100.0 - 1.0)
                .collect();
            a[5 * k + 2] = f32::NAN;
            a[(3 * m + 5) * k] = f32::NAN;
            // Rows of zeros: products of +0, so ties between +0 and the bias's sums.
            a[(7 * m) * k..(7 * m + 2) * k].fill(0.0);
            let small = SmallK::new(&b, k, n, false);
            assert_eq!(small.is_some(), small_k);
            let mut rows = vec![0f32; groups * m * n];
            match &small {
                Some(small) => small.rows(&a, &mut rows),
                None => {
                    use crate::gemm::Mul;
                    let rs = (k as isize, 1);
                    f32::gemm(groups * m, k, n, &a, rs, &b, (n as isize, 1), &mut rows);
                }
            }
            for activation in [Activation::None, Activation::Relu, Activation::HSwish] {
                for bias in [
                    None,
                    Some((0..n).map(|j| j as f32 * 0.1 - 3.0).collect::<Vec<_>>()),
                ] {
                    let e = Epilogue {
                        bias: bias.clone(),
                        bias_axis_from_end: 0,
                        activation,
                    };
                    let mut want = rows.clone();
                    e.apply_at(&mut want, 0, Channels::Inner(n));
                    let pick = |a: f32, x: f32| if x > a || x.is_nan() { x } else { a };
                    let want: Vec<u32> = (0..groups * n)
                        .map(|i| {
                            let (g, j) = (i / n, i % n);
                            let first = want[g * m * n + j];
                            (1..m).fold(first, |a, r| pick(a, want[(g * m + r) * n + j]))
                        })
                        .map(f32::to_bits)
                        .collect();
                    let got = match &small {
                        Some(small) => {
                            let mut got = vec![0f32; groups * n];
                            small.row_maxima(&a, m, (bias.as_deref(), activation), &mut got);
                            got
                        }
                        None => {
                            let mut finished = rows.clone();
                            e.apply_at(&mut finished, 0, Channels::Inner(n));
                            crate::row_max::fold_groups(groups, m, n, &|first, count, scratch| {
                                scratch.clear();
                                scratch.extend_from_slice(&finished[first * n..][..count * n]);
                            })
                            .unwrap()
                        }
                    };
                    let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "n {n}, {activation:?}, bias {}", bias.is_some());
                }
            }
        }
    }
}
