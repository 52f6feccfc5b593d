//! Products by a constant B whose inner dim is a handful of values: PointPillars' pillar
//! layer multiplies 384,000 rows of 9 features into 64 channels. A general GEMM spends such
//! a product packing and unpacking panels for 9 multiply-adds an output (rten-gemm took
//! 11.7 ms of the model's 75, writing 98 MB); here each row is one register tile of up to
//! 8 vectors of outputs, each input value broadcast against a row of B kept in L1.
//!
//! Each output is the chain of fused multiply-adds over the inner dim in order from 0, as
//! rten-gemm computes it for an inner dim this short, so prepared and run-time products give
//! the same bits (the op's tests compare them).

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

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

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
