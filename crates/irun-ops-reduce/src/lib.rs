//! The reduction and normalisation family: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
//! ReduceProd, ReduceL1, ReduceL2, SoftMax, LogSoftmax, MVN. One file per op; `reduce.rs` is
//! what the Reduce* ops share (attributes, inference, one kernel over `[outer, reduced,
//! inner]`), `along.rs` the slice kernel of SoftMax, LogSoftmax and MVN, `axes.rs` the
//! shape side of reducing over axes, `num.rs` how each element type accumulates.
//!
//! Architecture invariant: each output element folds its inputs in index order on one task,
//! so results are bit-identical for any thread count; floats accumulate in f64.

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing as testing_kit;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, simd, strided, util};

pub mod along;
pub mod axes;
pub mod floats;
pub mod num;
pub mod reduce;
#[cfg(test)]
mod testing;

pub mod batch_norm_inference;
pub mod cum_sum;
pub mod group_normalization;
pub mod log_softmax;
pub mod lrn;
pub mod mvn;
pub mod normalize_l2;
pub mod reduce_l1;
pub mod reduce_l2;
pub mod reduce_max;
pub mod reduce_mean;
pub mod reduce_min;
pub mod reduce_prod;
pub mod reduce_sum;
pub mod softmax;
