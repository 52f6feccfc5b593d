//! The library's tests through its public API, one binary for all (each test binary links
//! every op: one each cost a quarter of a gigabyte of disk and a link): the golden models
//! against OpenVINO, the ONNX suite, control flow, INT8, LLMs, state, random ops and the
//! reader's decoding. Run one part with a filter, e.g. `cargo test --test integration
//! model_goldens::`.

mod goldens;

mod control_flow;
mod int8;
mod llm;
mod model_goldens;
mod onnx_suite;
mod random_uniform;
mod reader_goldens;
mod stateful;
