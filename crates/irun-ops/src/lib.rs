//! irun-ops
