//! irun-graph
