//! The linear-algebra family: MatMul, Einsum, Convolution, GroupConvolution, MaxPool, AvgPool,
//! ScaledDotProductAttention, and the recurrent LSTM/GRU/RNN sequences and cells
//! (`recurrent/`). One file per op; `gemm.rs` is the one matrix
//! product (f32 on rten-gemm, f64 on matrixmultiply, integers exact with wrapping), `conv.rs`
//! the convolution kernel (`direct_conv/` its direct case on AVX-512 and AVX2, `conv_gemm.rs` its
//! GEMMs on packed filters, `depthwise/` its one-channel-per-group case, by phases on
//! AVX-512), `spatial.rs` the padding rules, `pool.rs` the window walk.
//! f16/bf16 are widened to f32 once and rounded once. Constant f32 weights (the filters of
//! GEMM convolutions, a MatMul's B) are packed for the GEMM once, by `Op::prepare`; the
//! direct convolution reads its filters in place.
//!
//! Architecture invariant: every output element of a product is computed by one task, so
//! results do not depend on the thread count (the prepared kernels give the run-time ones'
//! results bit for bit; tests compare them).

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, broadcast, fact, kernel, op, par, simd, util};

pub mod adaptive_pool;
pub mod avg_pool;
mod backprop_prepared;
mod backprop_rows;
mod channel_rows;
pub mod compressed;
pub mod conv;
pub mod conv_backprop;
mod conv_blocks;
mod conv_gemm;
pub mod conv_prepared;
mod conv_rows;
#[cfg(test)]
mod conv_testing;
pub mod convolution;
pub mod depthwise;
pub mod direct_conv;
pub mod einsum;
pub mod gemm;
pub mod group_convolution;
pub mod int8_conv;
mod lanes_epilogue;
pub mod matmul;
pub mod max_pool;
mod narrow;
pub mod pointwise;
pub mod pool;
pub mod recurrent;
mod row_max;
mod rows;
pub mod scaled_dot_product_attention;
mod small_k;
pub mod spatial;
mod stretches;

/// Whether this CPU has AVX-512F, which the direct convolution, the depthwise and max-pool
/// phase walks and the row copies run on (`std` caches the answer).
pub(crate) fn avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
