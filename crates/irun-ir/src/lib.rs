//! irun-ir
