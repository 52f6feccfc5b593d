//! irun-tensor: element types, partial shapes, dense tensors and `.npy`/`.npz` I/O.
//!
//! Architecture invariant: this crate knows nothing of IR files, graphs or ops. A [`Tensor`]
//! always holds exactly `product(shape)` values in the storage variant its element type maps to
//! ([`storage_kind`]); no constructor can break that.

#![forbid(unsafe_code)]

mod buf;
mod dispatch;
mod element;
#[cfg(feature = "ndarray")]
mod ndarray_interop;
mod npy;
mod shape;
mod tensor;
mod words;

pub use buf::{Buf, ByteSource};
pub use element::ElementType;
pub use half::{bf16, f16};
pub use npy::{
    read_npy, read_npy_checked, read_npy_from, read_npz, read_npz_checked, read_npz_within,
    write_npy, write_npz, EntryCheck, HeaderCheck,
};
pub use shape::{element_count, fmt_shape, Dim, PartialShape};
pub use tensor::{storage_kind, Scalar, Storage, Tensor};
pub use words::{Word, WordVec, Words};

/// Errors building tensors or reading/writing `.npy`/`.npz`.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    #[error("a tensor cannot have the dynamic element type")]
    DynamicType,
    #[error("storage does not match element type {ty}")]
    StorageMismatch { ty: ElementType },
    #[error("shape {shape} needs {expected} elements, got {got}")]
    LengthMismatch {
        shape: String,
        expected: usize,
        got: usize,
    },
    #[error("element count of shape {shape} overflows")]
    ShapeOverflow { shape: String },
    #[error("{0}")]
    Npy(String),
    /// Reading an array would take more bytes than the memory limit leaves.
    #[error("{what} needs {need} bytes, more than the memory limit leaves ({left} bytes)")]
    OverLimit { what: String, need: u64, left: u64 },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
