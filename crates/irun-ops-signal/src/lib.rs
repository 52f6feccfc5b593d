//! The signal family: DFT-7, IDFT-7, RDFT-9 and IRDFT-9 on realfft/rustfft (numpy's rfftn/irfftn semantics).
//! One file per op; `lines.rs` is what they share (axes and signal sizes, resizing an axis,
//! a transform over every line along an axis).

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, ...).
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, util};

pub mod dft;
pub mod irdft;
pub mod lines;
pub mod rdft;
