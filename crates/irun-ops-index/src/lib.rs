//! The index family: Bucketize, SearchSorted, GatherElements, GatherND, OneHot, NonZero, TopK, Unique and the embedding bags
//! (the scatter ops, also index ops, have their own crate). One file per op, named after it;
//! the four embedding-bag ops share `embedding_bag.rs`.
//!
//! Architecture invariant: every index is checked before the access it addresses; an index
//! out of range is a run-time error naming its position, or the result the op's spec defines
//! for it (OneHot's all-off row).

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, `crate::par`, ...).
#[cfg(test)]
pub(crate) use irun_opkit::testing as testing_kit;
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, util};

#[cfg(test)]
mod testing;

pub mod bucketize;
pub mod embedding_bag;
pub mod gather_elements;
pub mod gather_nd;
pub mod non_zero;
pub mod one_hot;
pub mod search_sorted;
pub mod top_k;
pub mod unique;
