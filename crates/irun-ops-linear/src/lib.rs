//! The linear-algebra family: MatMul (and next Einsum, Convolution, pools, attention). One file
//! per op. f32 and f64 products run on `matrixmultiply`'s packed, runtime-dispatched (AVX2/FMA)
//! kernels; f16/bf16 are widened to f32 once and rounded once; integers are exact with
//! wrapping, as OpenVINO's reference computes them.

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, broadcast, fact, kernel, op, par};

pub mod matmul;
