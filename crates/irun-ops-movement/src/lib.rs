//! The data-movement family: Reshape, Squeeze, Unsqueeze (no copy: the output shares the
//! input's buffer), Transpose, Concat, Split, VariadicSplit, Slice, Broadcast, Tile, Gather.
//! One file per op, named after it; most of them are layouts of the kit's one copy kernel
//! (`irun_opkit::strided`: an output read from the input through per-dim strides, 0 or
//! negative allowed); the kit's `util` reads value inputs and axes.
//!
//! Architecture invariant: copy-like kernels are generic over the element width
//! (`irun_tensor::Word`) only, and check every offset they can reach before they copy.

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing as testing_kit;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, strided, util};

#[cfg(test)]
mod testing;

pub mod axis_map;
pub mod batch_space;
pub mod blocks;
pub mod broadcast;
pub mod concat;
pub mod depth_to_space;
pub mod gather;
pub mod identity;
pub mod pad;
pub mod reshape;
pub mod reverse;
pub mod reverse_sequence;
pub mod roll;
pub mod shuffle_channels;
pub mod slice;
pub mod slice_scatter;
pub mod space_to_depth;
pub mod split;
pub mod squeeze;
pub mod strided_slice;
pub mod tile;
pub mod transpose;
pub mod unsqueeze;
pub mod variadic_split;
