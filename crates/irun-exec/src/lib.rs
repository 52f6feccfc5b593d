//! irun-exec
