//! The image and detection family: Interpolate-1/4/11, GridSample-9, NonMaxSuppression-5/9,
//! ROIAlign-3/9, ROIPooling-0, DetectionOutput-0/8, PriorBox-0/8, PriorBoxClustered-0,
//! Proposal-0/4, RegionYolo-0, ReorgYolo-0. One file per op; `resample.rs` is Interpolate's arithmetic
//! (coordinates, nearest rounding, each filter's taps, the separable pass).
//!
//! Architecture invariant: filtering modes compute in f64 and round to the element type
//! once (the pillow modes also after their first pass, as Pillow does); every output
//! element is a fixed sum in a fixed order, so results do not depend on the thread count.

#![forbid(unsafe_code)]

// The kit under the paths the op files use (`crate::op::Op`, ...).
#[allow(unused_imports)]
pub(crate) use irun_opkit::{attrs, fact, kernel, op, par, util};

pub mod detection_output;
pub mod grid_sample;
pub mod interpolate;
mod layout;
pub mod non_max_suppression;
mod pixels;
pub mod prior_box;
pub mod prior_box_clustered;
pub mod proposal;
pub mod region_yolo;
pub mod reorg_yolo;
pub mod resample;
pub mod roi_align;
mod roi_align_prepared;
pub mod roi_pooling;
