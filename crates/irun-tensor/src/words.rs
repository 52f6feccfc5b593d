//! Element-type dispatch by byte width, for copy-like kernels (Gather, Transpose, Concat,
//! Slice, Split, Tile, Broadcast, Pad, scatter `none`): they move values without looking at
//! them, so one instantiation per width (1, 2, 4, 8 bytes) serves all 13 scalar types, and a
//! kernel's code is compiled four times instead of thirteen.

use crate::element::ElementType;
use crate::tensor::{Storage, Tensor};
use crate::{Buf, TensorError};

/// A tensor's values seen as unsigned words of their width (bit patterns, unchanged).
#[derive(Clone, Copy, Debug)]
pub enum Words<'a> {
    W1(&'a [u8]),
    W2(&'a [u16]),
    W4(&'a [u32]),
    W8(&'a [u64]),
}

/// Owned words, to build a tensor of a given element type from ([`Tensor::from_words`]).
#[derive(Clone, Debug, PartialEq)]
pub enum WordVec {
    W1(Vec<u8>),
    W2(Vec<u16>),
    W4(Vec<u32>),
    W8(Vec<u64>),
}

/// One of the four word types; a copy-like kernel is generic over this and nothing else.
pub trait Word: bytemuck::Pod + Default + Send + Sync + std::fmt::Debug {
    fn into_word_vec(v: Vec<Self>) -> WordVec;
    /// The slice, if `words` has this width.
    fn of(words: Words<'_>) -> Option<&[Self]>;
}

macro_rules! word_impls {
    ($($t:ty => $variant:ident),*) => {$(
        impl Word for $t {
            fn into_word_vec(v: Vec<$t>) -> WordVec {
                WordVec::$variant(v)
            }
            fn of(words: Words<'_>) -> Option<&[$t]> {
                match words {
                    Words::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}
word_impls!(u8 => W1, u16 => W2, u32 => W4, u64 => W8);

/// Runs `$body` with `$w` bound to the word slice of a [`Words`], whatever its width.
#[macro_export]
macro_rules! with_words {
    ($words:expr, $w:ident => $body:expr) => {
        match $words {
            $crate::Words::W1($w) => $body,
            $crate::Words::W2($w) => $body,
            $crate::Words::W4($w) => $body,
            $crate::Words::W8($w) => $body,
        }
    };
}

impl Words<'_> {
    pub fn len(&self) -> usize {
        with_words!(self, w => w.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Tensor {
    /// The values as words of their width; `None` for strings.
    pub fn words(&self) -> Option<Words<'_>> {
        use bytemuck::cast_slice as c;
        Some(match self.storage() {
            Storage::Bool(v) => Words::W1(c(v)),
            Storage::I8(v) => Words::W1(c(v)),
            Storage::U8(v) => Words::W1(v),
            Storage::F16(v) => Words::W2(c(v)),
            Storage::Bf16(v) => Words::W2(c(v)),
            Storage::I16(v) => Words::W2(c(v)),
            Storage::U16(v) => Words::W2(v),
            Storage::F32(v) => Words::W4(c(v)),
            Storage::I32(v) => Words::W4(c(v)),
            Storage::U32(v) => Words::W4(v),
            Storage::F64(v) => Words::W8(c(v)),
            Storage::I64(v) => Words::W8(c(v)),
            Storage::U64(v) => Words::W8(v),
            Storage::String(_) => return None,
        })
    }

    /// A tensor of type `ty` whose values have the bit patterns `words` (no copy, except for
    /// boolean, whose bytes must each be 0 or 1). The width must be the storage width of `ty`.
    pub fn from_words(
        ty: ElementType,
        shape: Vec<usize>,
        words: WordVec,
    ) -> Result<Tensor, TensorError> {
        use bytemuck::allocation::cast_vec as c;
        let kind = crate::storage_kind(ty).ok_or(TensorError::DynamicType)?;
        let storage = match (kind, words) {
            (Storage::Bool(_), WordVec::W1(v)) => {
                if v.iter().any(|&b| b > 1) {
                    return Err(TensorError::StorageMismatch { ty });
                }
                Storage::Bool(v.into_iter().map(|b| b == 1).collect::<Buf<bool>>())
            }
            (Storage::I8(_), WordVec::W1(v)) => Storage::I8(c::<u8, i8>(v).into()),
            (Storage::U8(_), WordVec::W1(v)) => Storage::U8(v.into()),
            (Storage::F16(_), WordVec::W2(v)) => Storage::F16(c::<u16, half::f16>(v).into()),
            (Storage::Bf16(_), WordVec::W2(v)) => Storage::Bf16(c::<u16, half::bf16>(v).into()),
            (Storage::I16(_), WordVec::W2(v)) => Storage::I16(c::<u16, i16>(v).into()),
            (Storage::U16(_), WordVec::W2(v)) => Storage::U16(v.into()),
            (Storage::F32(_), WordVec::W4(v)) => Storage::F32(c::<u32, f32>(v).into()),
            (Storage::I32(_), WordVec::W4(v)) => Storage::I32(c::<u32, i32>(v).into()),
            (Storage::U32(_), WordVec::W4(v)) => Storage::U32(v.into()),
            (Storage::F64(_), WordVec::W8(v)) => Storage::F64(c::<u64, f64>(v).into()),
            (Storage::I64(_), WordVec::W8(v)) => Storage::I64(c::<u64, i64>(v).into()),
            (Storage::U64(_), WordVec::W8(v)) => Storage::U64(v.into()),
            _ => return Err(TensorError::StorageMismatch { ty }),
        };
        Tensor::new(ty, shape, storage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_every_width_bit_exactly() {
        let cases = [
            Tensor::from_f32(vec![3], vec![1.5, -0.0, f32::NAN]).unwrap(),
            Tensor::from_i64(vec![2], vec![i64::MIN, 7]).unwrap(),
            Tensor::from_bf16(vec![1], vec![half::bf16::from_f32(3.0)]).unwrap(),
            Tensor::from_bool(vec![2], vec![true, false]).unwrap(),
            Tensor::from_i8(vec![1], vec![-3]).unwrap(),
        ];
        for t in cases {
            let w = match t.words().unwrap() {
                Words::W1(v) => WordVec::W1(v.to_vec()),
                Words::W2(v) => WordVec::W2(v.to_vec()),
                Words::W4(v) => WordVec::W4(v.to_vec()),
                Words::W8(v) => WordVec::W8(v.to_vec()),
            };
            let back = Tensor::from_words(t.element_type(), t.shape().to_vec(), w).unwrap();
            assert_eq!(back.words().unwrap().len(), t.len());
            assert_eq!(format!("{back:?}"), format!("{t:?}"));
        }
    }

    #[test]
    fn from_words_checks_width_and_booleans() {
        assert!(Tensor::from_words(ElementType::F32, vec![1], WordVec::W8(vec![0])).is_err());
        assert!(Tensor::from_words(ElementType::Boolean, vec![1], WordVec::W1(vec![2])).is_err());
        let t = Tensor::from_words(ElementType::Boolean, vec![2], WordVec::W1(vec![1, 0]));
        assert_eq!(t.unwrap().values::<bool>().unwrap(), &[true, false]);
    }
}
