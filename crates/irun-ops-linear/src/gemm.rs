//! The matrix product every linear op runs on: `c = a x b` for one matrix. f32 on rten-gemm,
//! f64 on matrixmultiply (both pick AVX-512/AVX2/FMA kernels at run time), integers exact
//! with wrapping.

use irun_tensor::Scalar;
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
