//! A dense row-major tensor with safe typed storage.

use half::{bf16, f16};

use std::ops::Deref;
use std::sync::Arc;

use crate::buf::Buf;
use crate::element::ElementType;
use crate::shape::{element_count, fmt_shape};
use crate::TensorError;

/// The values of a tensor, one [`Buf`] (an owned `Vec` or values borrowed from the mapped
/// weights) per Rust scalar type.
///
/// Which variant holds each element type ([`storage_kind`]):
/// * boolean -> `Bool` (decoded `0`/non-zero -> `false`/`true`);
/// * the byte-and-wider numeric types -> their own variant;
/// * packed unsigned u1/u2/u3/u4/u6 -> `U8` (one element per byte, values `0..2^bits`);
/// * packed signed i4 -> `I8` (values `-8..=7`);
/// * the narrow floats nf4/f4e2m1/f8e4m3/f8e5m2/f8e8m0 -> `F32` holding the exact decoded value
///   (every one of them is representable in f32);
/// * string -> `String` (UTF-8; invalid bytes are an error at decode time).
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    Bool(Buf<bool>),
    F16(Buf<f16>),
    Bf16(Buf<bf16>),
    F32(Buf<f32>),
    F64(Buf<f64>),
    I8(Buf<i8>),
    I16(Buf<i16>),
    I32(Buf<i32>),
    I64(Buf<i64>),
    U8(Buf<u8>),
    U16(Buf<u16>),
    U32(Buf<u32>),
    U64(Buf<u64>),
    String(Buf<String>),
}

/// The storage variant (as an empty `Storage`) that holds `ty`; `None` for dynamic.
pub fn storage_kind(ty: ElementType) -> Option<Storage> {
    use ElementType::*;
    Some(match ty {
        Dynamic => return None,
        Boolean => Storage::Bool(Buf::from(Vec::new())),
        F16 => Storage::F16(Buf::from(Vec::new())),
        Bf16 => Storage::Bf16(Buf::from(Vec::new())),
        F32 | Nf4 | F4e2m1 | F8e4m3 | F8e5m2 | F8e8m0 => Storage::F32(Buf::from(Vec::new())),
        F64 => Storage::F64(Buf::from(Vec::new())),
        I4 | I8 => Storage::I8(Buf::from(Vec::new())),
        I16 => Storage::I16(Buf::from(Vec::new())),
        I32 => Storage::I32(Buf::from(Vec::new())),
        I64 => Storage::I64(Buf::from(Vec::new())),
        U1 | U2 | U3 | U4 | U6 | U8 => Storage::U8(Buf::from(Vec::new())),
        U16 => Storage::U16(Buf::from(Vec::new())),
        U32 => Storage::U32(Buf::from(Vec::new())),
        U64 => Storage::U64(Buf::from(Vec::new())),
        String => Storage::String(Buf::from(Vec::new())),
    })
}

/// Applies `$body` to the `Vec` inside any storage variant, bound as `$v`.
#[macro_export]
macro_rules! with_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            $crate::Storage::Bool($v) => $body,
            $crate::Storage::F16($v) => $body,
            $crate::Storage::Bf16($v) => $body,
            $crate::Storage::F32($v) => $body,
            $crate::Storage::F64($v) => $body,
            $crate::Storage::I8($v) => $body,
            $crate::Storage::I16($v) => $body,
            $crate::Storage::I32($v) => $body,
            $crate::Storage::I64($v) => $body,
            $crate::Storage::U8($v) => $body,
            $crate::Storage::U16($v) => $body,
            $crate::Storage::U32($v) => $body,
            $crate::Storage::U64($v) => $body,
            $crate::Storage::String($v) => $body,
        }
    };
}

impl Storage {
    /// Decodes the byte-aligned types (boolean: any non-zero byte is true; the numeric types in
    /// little- or big-endian order) from a byte slice, possibly unaligned. Trailing bytes that
    /// do not fill an element are ignored. `None` for packed types, string and dynamic.
    pub fn from_bytes(ty: ElementType, bytes: &[u8], big_endian: bool) -> Option<Storage> {
        macro_rules! num {
            ($t:ty, $n:literal) => {
                bytes
                    .chunks_exact($n)
                    .map(|c| {
                        let a: [u8; $n] = c.try_into().expect("chunk size");
                        if big_endian {
                            <$t>::from_be_bytes(a)
                        } else {
                            <$t>::from_le_bytes(a)
                        }
                    })
                    .collect()
            };
        }
        use ElementType as E;
        Some(match ty {
            E::Boolean => Storage::Bool(bytes.iter().map(|&b| b != 0).collect()),
            E::F16 => Storage::F16(num!(f16, 2)),
            E::Bf16 => Storage::Bf16(num!(bf16, 2)),
            E::F32 => Storage::F32(num!(f32, 4)),
            E::F64 => Storage::F64(num!(f64, 8)),
            E::I8 => Storage::I8(bytes.iter().map(|&b| b as i8).collect()),
            E::I16 => Storage::I16(num!(i16, 2)),
            E::I32 => Storage::I32(num!(i32, 4)),
            E::I64 => Storage::I64(num!(i64, 8)),
            E::U8 => Storage::U8(bytes.to_vec().into()),
            E::U16 => Storage::U16(num!(u16, 2)),
            E::U32 => Storage::U32(num!(u32, 4)),
            E::U64 => Storage::U64(num!(u64, 8)),
            _ => return None,
        })
    }

    pub fn len(&self) -> usize {
        with_storage!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values at `positions`, in that order: a gather on the flat layout. Panics if a
    /// position is not below `len()`.
    pub fn take(&self, positions: &[u32]) -> Storage {
        macro_rules! take {
            ($($variant:ident),*) => {
                match self {
                    $(Storage::$variant(v) => {
                        Storage::$variant(positions.iter().map(|&p| v[p as usize].clone()).collect())
                    })*
                }
            };
        }
        take!(Bool, F16, Bf16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, String)
    }

    fn same_variant(&self, other: &Storage) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// A dense, row-major tensor. Invariants (checked by [`Tensor::new`]): the storage variant is
/// the one [`storage_kind`] names for `ty`, and its length is the product of `shape`.
///
/// The storage is shared: `clone`, [`Tensor::reshaped`] and [`Tensor::with_shape`] cost no
/// copy, and a write through [`Tensor::values_mut`] copies first when the storage is shared
/// or borrowed from the weights (copy on write), so no tensor ever sees another's writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    ty: ElementType,
    shape: Vec<usize>,
    data: Arc<Storage>,
}

impl Tensor {
    pub fn new(ty: ElementType, shape: Vec<usize>, data: Storage) -> Result<Tensor, TensorError> {
        let kind = storage_kind(ty).ok_or(TensorError::DynamicType)?;
        if !kind.same_variant(&data) {
            return Err(TensorError::StorageMismatch { ty });
        }
        let n = element_count(&shape).ok_or_else(|| TensorError::ShapeOverflow {
            shape: fmt_shape(&shape),
        })?;
        if n != data.len() {
            return Err(TensorError::LengthMismatch {
                shape: fmt_shape(&shape),
                expected: n,
                got: data.len(),
            });
        }
        Ok(Tensor {
            ty,
            shape,
            data: Arc::new(data),
        })
    }

    /// A tensor of zeros (false, empty strings) of the given type and shape.
    pub fn zeros(ty: ElementType, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        let n = element_count(&shape).ok_or_else(|| TensorError::ShapeOverflow {
            shape: fmt_shape(&shape),
        })?;
        let mut data = storage_kind(ty).ok_or(TensorError::DynamicType)?;
        with_storage!(&mut data, v => v.make_mut().resize(n, Default::default()));
        Tensor::new(ty, shape, data)
    }

    pub fn element_type(&self) -> ElementType {
        self.ty
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn storage(&self) -> &Storage {
        &self.data
    }

    /// The storage, copied only when another tensor shares it.
    pub fn into_storage(self) -> Storage {
        Arc::unwrap_or_clone(self.data)
    }

    /// Whether `self` and `other` read the same values in memory (a reshape of one another,
    /// or two views of the same weights), as opposed to equal copies.
    pub fn shares_storage_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.data, &other.data) || {
            let (a, b) = (self.data_ptr(), other.data_ptr());
            !a.is_null() && a == b
        }
    }

    /// Address of the first value (null when empty), for [`Tensor::shares_storage_with`].
    fn data_ptr(&self) -> *const u8 {
        if self.data.is_empty() {
            return std::ptr::null();
        }
        with_storage!(self.data.deref(), v => v.as_ptr().cast::<u8>())
    }

    /// Whether this tensor alone owns its values (not shared with another tensor, not
    /// borrowed from the weights), so that writing them needs no copy.
    pub fn is_exclusive(&self) -> bool {
        Arc::strong_count(&self.data) == 1 && !self.is_borrowed()
    }

    /// A copy with values of its own (no storage shared with `self`).
    pub fn deep_clone(&self) -> Tensor {
        macro_rules! copy {
            ($($variant:ident),*) => {
                match self.data.deref() {
                    $(Storage::$variant(v) => Storage::$variant(v.to_vec().into()),)*
                }
            };
        }
        let data = copy!(Bool, F16, Bf16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, String);
        Tensor {
            ty: self.ty,
            shape: self.shape.clone(),
            data: Arc::new(data),
        }
    }

    /// Whether the values are borrowed from the weights file rather than owned.
    pub fn is_borrowed(&self) -> bool {
        with_storage!(self.data.deref(), v => v.is_borrowed())
    }

    /// Every element converted to i64, for index-like tensors (integers and booleans).
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        Some(match self.data.deref() {
            Storage::Bool(v) => v.iter().map(|&b| b as i64).collect(),
            Storage::I8(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::I16(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::I32(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::I64(v) => v.to_vec(),
            Storage::U8(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::U16(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::U32(v) => v.iter().map(|&x| x as i64).collect(),
            Storage::U64(v) => v
                .iter()
                .map(|&x| i64::try_from(x).ok())
                .collect::<Option<_>>()?,
            _ => return None,
        })
    }

    /// A short human-readable rendering of the first `limit` values.
    pub fn preview(&self, limit: usize) -> String {
        fn join<T: std::fmt::Debug>(v: &[T], limit: usize) -> String {
            let mut s: Vec<String> = v.iter().take(limit).map(|x| format!("{x:?}")).collect();
            if v.len() > limit {
                s.push("...".into());
            }
            s.join(", ")
        }
        with_storage!(self.data.deref(), v => join(v, limit))
    }
}

macro_rules! typed_constructors {
    ($($fn_name:ident: $t:ty => $variant:ident, $ty:ident;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("A `", stringify!($ty), "` tensor from values and a shape.")]
                pub fn $fn_name(shape: Vec<usize>, values: Vec<$t>) -> Result<Tensor, TensorError> {
                    Tensor::new(ElementType::$ty, shape, Storage::$variant(values.into()))
                }
            )*
        }
    };
}

typed_constructors! {
    from_bool: bool => Bool, Boolean;
    from_f16: f16 => F16, F16;
    from_bf16: bf16 => Bf16, Bf16;
    from_f32: f32 => F32, F32;
    from_f64: f64 => F64, F64;
    from_i8: i8 => I8, I8;
    from_i16: i16 => I16, I16;
    from_i32: i32 => I32, I32;
    from_i64: i64 => I64, I64;
    from_u8: u8 => U8, U8;
    from_u16: u16 => U16, U16;
    from_u32: u32 => U32, U32;
    from_u64: u64 => U64, U64;
}

/// A Rust scalar type that is the element of one [`Storage`] variant: typed access to a
/// tensor's values without matching on the variant at every use.
pub trait Scalar: Copy + Default + Send + Sync + 'static {
    /// The element type a tensor of these values has.
    const ELEMENT_TYPE: ElementType;
    /// The values, if `s` is this type's variant.
    fn slice(s: &Storage) -> Option<&[Self]>;
    /// The values, mutably, if `s` is this type's variant.
    fn slice_mut(s: &mut Storage) -> Option<&mut [Self]>;
    /// Wraps values in this type's variant.
    fn wrap(v: Vec<Self>) -> Storage {
        Self::wrap_buf(v.into())
    }
    /// Wraps owned or borrowed values in this type's variant.
    fn wrap_buf(b: Buf<Self>) -> Storage;
    /// Unwraps this type's variant; any other variant comes back unchanged.
    fn unwrap(s: Storage) -> Result<Vec<Self>, Storage>;
}

macro_rules! scalar_impls {
    ($($t:ty => $variant:ident, $ty:ident;)*) => {$(
        impl Scalar for $t {
            const ELEMENT_TYPE: ElementType = ElementType::$ty;
            fn slice(s: &Storage) -> Option<&[Self]> {
                match s { Storage::$variant(v) => Some(v.deref()), _ => None }
            }
            fn slice_mut(s: &mut Storage) -> Option<&mut [Self]> {
                match s { Storage::$variant(v) => Some(v.make_mut().as_mut_slice()), _ => None }
            }
            fn wrap_buf(b: Buf<Self>) -> Storage {
                Storage::$variant(b)
            }
            fn unwrap(s: Storage) -> Result<Vec<Self>, Storage> {
                match s { Storage::$variant(v) => Ok(v.into_vec()), other => Err(other) }
            }
        }
    )*};
}

scalar_impls! {
    bool => Bool, Boolean; f16 => F16, F16; bf16 => Bf16, Bf16; f32 => F32, F32;
    f64 => F64, F64; i8 => I8, I8; i16 => I16, I16; i32 => I32, I32; i64 => I64, I64;
    u8 => U8, U8; u16 => U16, U16; u32 => U32, U32; u64 => U64, U64;
}

impl Tensor {
    /// A tensor of `T`'s element type from values and a shape (`Tensor::from_f32` and the
    /// other typed constructors, for code generic over the type).
    pub fn from_values<T: Scalar>(
        shape: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Tensor, TensorError> {
        Tensor::new(T::ELEMENT_TYPE, shape, T::wrap(values))
    }

    /// The values as a typed slice, if `T` is the element of this tensor's storage.
    pub fn values<T: Scalar>(&self) -> Option<&[T]> {
        T::slice(&self.data)
    }

    /// The values as a mutable typed slice. The length cannot change, so the invariant holds.
    /// Shared or borrowed storage is copied first (only when `T` is this tensor's type).
    pub fn values_mut<T: Scalar>(&mut self) -> Option<&mut [T]> {
        T::slice(&self.data)?;
        T::slice_mut(Arc::make_mut(&mut self.data))
    }

    /// Splits into element type, shape and storage (the inverse of [`Tensor::new`]).
    pub fn into_parts(self) -> (ElementType, Vec<usize>, Storage) {
        (self.ty, self.shape, Arc::unwrap_or_clone(self.data))
    }

    /// The same values under another shape with the same element count; no copy.
    pub fn reshaped(self, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        self.with_shape(shape)
    }

    /// A tensor with this one's values (shared, not copied) under another shape with the same
    /// element count: what Reshape, Squeeze and Unsqueeze return.
    pub fn with_shape(&self, shape: Vec<usize>) -> Result<Tensor, TensorError> {
        let n = element_count(&shape).ok_or_else(|| TensorError::ShapeOverflow {
            shape: fmt_shape(&shape),
        })?;
        if n != self.data.len() {
            return Err(TensorError::LengthMismatch {
                shape: fmt_shape(&shape),
                expected: n,
                got: self.data.len(),
            });
        }
        Ok(Tensor {
            ty: self.ty,
            shape,
            data: self.data.clone(),
        })
    }

    /// Size of the values in memory, in bytes (strings count their UTF-8 bytes).
    pub fn byte_size(&self) -> usize {
        match self.data.deref() {
            Storage::String(v) => v
                .iter()
                .map(|s| s.len() + std::mem::size_of::<String>())
                .sum(),
            other => with_storage!(other, v => std::mem::size_of_val::<[_]>(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructor_checks_length_and_variant() {
        assert!(Tensor::from_f32(vec![2, 2], vec![0.0; 4]).is_ok());
        assert!(matches!(
            Tensor::from_f32(vec![2, 2], vec![0.0; 3]),
            Err(TensorError::LengthMismatch { .. })
        ));
        assert!(matches!(
            Tensor::new(ElementType::I32, vec![1], Storage::F32(vec![1.0].into())),
            Err(TensorError::StorageMismatch { .. })
        ));
        assert!(Tensor::new(ElementType::U4, vec![2], Storage::U8(vec![1, 15].into())).is_ok());
        assert!(matches!(
            Tensor::zeros(ElementType::F32, vec![usize::MAX, 2]),
            Err(TensorError::ShapeOverflow { .. })
        ));
    }

    #[test]
    fn take_gathers_in_the_given_order() {
        assert_eq!(
            Storage::I16(vec![10, 11, 12].into()).take(&[2, 0, 2]),
            Storage::I16(vec![12, 10, 12].into())
        );
        assert_eq!(
            Storage::String(vec!["a".into(), "b".into()].into()).take(&[1]),
            Storage::String(vec!["b".into()].into())
        );
        assert_eq!(
            Storage::Bool(vec![true].into()).take(&[]),
            Storage::Bool(vec![].into())
        );
    }
}
