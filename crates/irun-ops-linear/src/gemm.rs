//! The matrix product every linear op runs on: `c = a x b` for one matrix, f32/f64 on
//! matrixmultiply's packed, runtime-dispatched (AVX2/FMA) kernels, integers exact with
//! wrapping.

use irun_tensor::Scalar;

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
        assert!(a.len() >= reach(m, k, sa) && b.len() >= reach(k, n, sb) && c.len() >= m * n);
        // SAFETY: every element of the m x k matrix at strides `sa` lies in `a`, every element
        // of the k x n one at `sb` in `b` (`reach`, asserted just above; the strides are
        // non-negative), and `c` is an exclusive m x n row-major block: matrixmultiply reads
        // and writes only those elements.
        unsafe {
            matrixmultiply::sgemm(
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
