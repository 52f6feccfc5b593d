"""bf16 for the tools: numpy has no bf16 type, so bf16 arrays travel as their raw 16-bit
patterns. In .npz files they are stored with dtype "V2" (2-byte void), which irun's reader takes
as bf16, as ml_dtypes.bfloat16 arrays are written.

Imported by the tools beside it (`python3 tools/<tool>.py` puts this folder on sys.path).
"""

import numpy as np

# The .npz storage dtype of bf16 arrays.
STORAGE = np.dtype("V2")


def bits(x):
    """bf16 bit patterns given as uint16 or V2 -> the same patterns as uint16."""
    x = np.asarray(x)
    return x.view(np.uint16) if x.dtype == STORAGE else x.astype(np.uint16, copy=False)


def to_f32(x):
    """bf16 bit patterns (uint16 or V2) -> the f32 values they stand for (exactly)."""
    return (bits(x).astype(np.uint32) << 16).view(np.float32)


def from_f32(x):
    """f32 values -> bf16 bit patterns (uint16), rounded to nearest, ties to even; a NaN stays a
    NaN (quiet, its sign and high payload bits kept)."""
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return np.where(np.isnan(x), (b >> 16) | 0x40, rounded).astype(np.uint16)


def stored(x):
    """f32 values -> a bf16 array as .npz files store it (dtype STORAGE)."""
    return from_f32(x).view(STORAGE)


def openvino_tensor(x):
    """bf16 bit patterns (uint16 or V2) -> an OpenVINO bf16 tensor holding them: OpenVINO's
    Python API takes no numpy array as bf16, so they are copied into a new tensor. (OpenVINO
    is imported here, so that the tools that need only numpy do not need it.)"""
    import openvino as ov

    x = bits(x)
    t = ov.Tensor(ov.Type.bf16, list(x.shape))
    t.data.view(np.uint16)[...] = x
    return t
