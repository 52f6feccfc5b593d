//! numpy arrays to tensors and back.
//!
//! In: an array of a type irun has is borrowed when it is C-contiguous and aligned (the
//! tensor reads the array's buffer through [`ArrayBytes`]); otherwise its elements are copied
//! in logical order. Out: a tensor's values become the numpy array's buffer, without a copy
//! when the tensor owns them.

use half::{bf16, f16};
use irun::{ElementType, Storage, Tensor};
use irun_tensor::{Buf, ByteSource};
use numpy::{
    Element, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::RunError;

/// The numpy dtype name a tensor of `ty` comes back as.
pub fn dtype_name(ty: ElementType) -> &'static str {
    use ElementType::*;
    match ty {
        Boolean => "bool",
        F16 => "float16",
        Bf16 => "bfloat16",
        F32 | Nf4 | F4e2m1 | F8e4m3 | F8e5m2 | F8e8m0 => "float32",
        F64 => "float64",
        I4 | I8 => "int8",
        I16 => "int16",
        I32 => "int32",
        I64 => "int64",
        U1 | U2 | U3 | U4 | U6 | U8 => "uint8",
        U16 => "uint16",
        U32 => "uint32",
        U64 => "uint64",
        String => "object",
        Dynamic => "dynamic",
    }
}

/// The buffer of a numpy array that a tensor reads in place.
struct ArrayBytes {
    /// Keeps the array, and so its buffer, alive while any tensor reads it.
    _array: Py<PyAny>,
    addr: usize,
    len: usize,
}

impl ByteSource for ArrayBytes {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `addr..addr + len` is the data buffer of the array `_array` holds, taken from
        // a C-contiguous view of it ([`borrow`]). The reference keeps the array alive, and
        // numpy neither frees nor moves the buffer of an array that another reference holds
        // (`resize` refuses when references exist; `.data` cannot be reassigned). Nothing in
        // irun writes through it: `Buf::make_mut` copies a borrowed buffer first. Changing the
        // array from another Python thread during a call is ruled out by the API's contract
        // (the `__call__` docstring), as it is for onnxruntime's and OpenVINO's bindings.
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }
}

/// An input value as a tensor. `want`: the model's element type for it, to which a value
/// that is not yet an array (a list, a scalar) is converted. `borrow`: whether a suitable
/// array may be read in place (not for values a state may keep beyond the call).
pub fn to_tensor(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    want: Option<ElementType>,
    borrow: bool,
    what: &str,
) -> PyResult<Tensor> {
    let array: Bound<'_, PyUntypedArray> = match value.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => {
            let dtype = want
                .map(dtype_name)
                .filter(|d| !matches!(*d, "bfloat16" | "object" | "dynamic"));
            let np = py.import("numpy")?;
            np.call_method1("asarray", (value, dtype))?
                .cast_into::<PyUntypedArray>()?
        }
    };
    let dtype = array.dtype();
    macro_rules! try_types {
        ($($t:ty),*) => {$(
            if dtype.is_equiv_to(&numpy::dtype::<$t>(py)) {
                return typed::<$t, $t>(&array, borrow, what);
            }
        )*};
    }
    try_types!(f32, f64, f16, i8, i16, i32, i64, u8, u16, u32, u64);
    if dtype.is_equiv_to(&numpy::dtype::<bool>(py)) {
        let a = array.cast::<PyArrayDyn<bool>>()?;
        let values: Vec<bool> = a.readonly().as_array().iter().copied().collect();
        return new_tensor(
            ElementType::Boolean,
            a.shape(),
            Storage::Bool(values.into()),
            what,
        );
    }
    // ml_dtypes' bfloat16, or 2-byte void values (`<V2`, how `.npz` files carry bf16 without
    // it, as `irun run` reads them): read the bits through a uint16 view of the same buffer.
    let name: String = dtype.getattr("name")?.extract()?;
    if dtype.itemsize() == 2
        && (name == "bfloat16" || (dtype.kind() == b'V' && !dtype.has_fields()))
    {
        let bits = array
            .call_method1("view", ("uint16",))?
            .cast_into::<PyUntypedArray>()?;
        return typed::<u16, bf16>(&bits, borrow, what);
    }
    if dtype.kind() == b'U' || dtype.kind() == b'O' {
        let items: Vec<String> = array
            .call_method0("ravel")?
            .call_method0("tolist")?
            .extract()?;
        return new_tensor(
            ElementType::String,
            array.shape(),
            Storage::String(items.into()),
            what,
        );
    }
    Err(RunError::new_err(format!(
        "input `{what}`: numpy dtype {} has no irun element type",
        dtype.str()?
    )))
}

/// The array of numpy element `N` as a tensor of Rust element `T` (the same bits: `T` is
/// `N` or, for bfloat16, its reinterpretation).
fn typed<N, T>(array: &Bound<'_, PyUntypedArray>, borrow: bool, what: &str) -> PyResult<Tensor>
where
    N: Element + bytemuck::Pod,
    T: irun::Scalar + bytemuck::Pod,
{
    let a = array.cast::<PyArrayDyn<N>>()?;
    let shape = a.shape().to_vec();
    let ro = a.readonly();
    // `as_slice` also accepts a Fortran-ordered buffer, whose order is not the tensor's.
    let buf = match ro.as_slice() {
        Ok(slice) if borrow && a.is_c_contiguous() => {
            let source = std::sync::Arc::new(ArrayBytes {
                _array: a.clone().into_any().unbind(),
                addr: slice.as_ptr() as usize,
                len: std::mem::size_of_val(slice),
            });
            // None when the buffer is not aligned for T: copied below.
            Buf::<T>::borrow(source, 0, slice.len())
        }
        _ => None,
    };
    let buf = match buf {
        Some(b) => b,
        None => {
            let values: Vec<N> = ro.as_array().iter().copied().collect();
            Buf::from(bytemuck::cast_vec::<N, T>(values))
        }
    };
    new_tensor(T::ELEMENT_TYPE, &shape, T::wrap_buf(buf), what)
}

fn new_tensor(ty: ElementType, shape: &[usize], data: Storage, what: &str) -> PyResult<Tensor> {
    Tensor::new(ty, shape.to_vec(), data)
        .map_err(|e| RunError::new_err(format!("input `{what}`: {e}")))
}

/// A tensor as a numpy array: its values become the array's buffer (a copy only when they
/// are shared or borrowed). bf16 comes back as `ml_dtypes.bfloat16` when that is installed,
/// else as its uint16 bits with a `UserWarning` saying so; strings as an object array.
pub fn to_numpy(py: Python<'_>, tensor: Tensor) -> PyResult<Bound<'_, PyAny>> {
    let (_, shape, storage) = tensor.into_parts();
    fn array<'py, T: Element>(
        py: Python<'py>,
        v: Vec<T>,
        shape: &[usize],
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_vec(py, v)
            .reshape(shape.to_vec())?
            .into_any())
    }
    // Every storage numpy has a type for is handed over as it is.
    macro_rules! to_array {
        ($($variant:ident),*) => {
            match storage {
                $(Storage::$variant(b) => array(py, b.into_vec(), &shape),)*
                Storage::Bf16(b) => {
                    let bits = array(py, bytemuck::cast_vec::<bf16, u16>(b.into_vec()), &shape)?;
                    match py.import("ml_dtypes") {
                        Ok(ml) => bits.call_method1("view", (ml.getattr("bfloat16")?,)),
                        Err(_) => {
                            let note = c"irun: a bf16 output is returned as its uint16 bits; install ml_dtypes to get bfloat16 arrays";
                            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), note, 1)?;
                            Ok(bits)
                        }
                    }
                }
                Storage::String(b) => {
                    let list = PyList::new(py, b.into_vec())?;
                    py.import("numpy")?
                        .call_method1("array", (list, "object"))?
                        .call_method1("reshape", (shape,))
                }
            }
        };
    }
    to_array!(Bool, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64)
}
