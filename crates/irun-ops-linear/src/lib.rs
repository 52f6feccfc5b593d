//! The linear-algebra family: MatMul (and next Einsum, Convolution, pools, attention). One file
//! per op. f32 and f64 products run on `matrixmultiply`'s packed, runtime-dispatched (AVX2/FMA)
//! kernels; f16/bf16 are widened to f32 once and rounded once; integers are exact with
//! wrapping, as OpenVINO's reference computes them.

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, broadcast, fact, kernel, op, par, util};

pub mod avg_pool;
pub mod conv;
pub mod convolution;
pub mod gemm;
pub mod group_convolution;
pub mod matmul;
pub mod max_pool;
pub mod pool;
pub mod scaled_dot_product_attention;
pub mod spatial;

/// An integer attribute, `default` when omitted.
pub(crate) fn softmax_like_int(
    a: &attrs::AttrReader,
    name: &'static str,
    default: i64,
) -> Result<i64, op::OpError> {
    match a.get(name) {
        None => Ok(default),
        Some(v) => v.value.trim().parse().map_err(|_| {
            op::OpError::attribute(name, format!("`{name}=\"{}\"` is not an integer", v.value))
        }),
    }
}
