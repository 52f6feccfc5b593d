//! `Buf<T>`: the values of one storage variant, either owned or borrowed from an immutable
//! byte source (the memory-mapped `.bin`), so that weights whose layout already matches are
//! used where they lie instead of being decoded into a second copy.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Bytes that never change and never move while any [`Buf`] borrows them: a read-only memory
/// map, or a file's contents read into memory once. Both keep their address for their whole
/// life, which is what makes an alignment check at borrow time valid for every later access.
pub trait ByteSource: Send + Sync {
    fn bytes(&self) -> &[u8];
}

/// Values of type `T`: an owned `Vec<T>`, or `len` values borrowed from a [`ByteSource`].
/// Reads see a `&[T]` either way ([`Deref`]); [`Buf::make_mut`] turns a borrowed buffer
/// into an owned copy first, so a source is never written.
pub struct Buf<T> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    Borrowed {
        source: Arc<dyn ByteSource>,
        start: usize,
        len: usize,
        /// Reinterprets the borrowed bytes as `T`s. Set only by [`Buf::borrow`], which
        /// requires `T: Pod` and checked that the bytes are aligned for `T`; the source never
        /// moves, so the cast cannot fail later.
        cast: fn(&[u8]) -> &[T],
    },
}

impl<T> Buf<T> {
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Owned(v) => v.len(),
            Repr::Borrowed { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the values are borrowed from a byte source rather than owned.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.repr, Repr::Borrowed { .. })
    }

    /// Bytes this buffer owns (a borrowed one owns none: the source is shared).
    pub fn owned_bytes(&self) -> usize {
        match &self.repr {
            Repr::Owned(v) => std::mem::size_of_val(v.as_slice()),
            Repr::Borrowed { .. } => 0,
        }
    }

    /// Address of the first value, to tell whether two tensors share one buffer.
    pub fn as_ptr(&self) -> *const T {
        self.deref().as_ptr()
    }
}

impl<T: bytemuck::Pod> Buf<T> {
    /// `len` values of `T` at byte `start` of `source`, without a copy. `None` when the range
    /// is outside the source or not aligned for `T` (the caller then decodes a copy).
    pub fn borrow(source: Arc<dyn ByteSource>, start: usize, len: usize) -> Option<Buf<T>> {
        let size = len.checked_mul(std::mem::size_of::<T>())?;
        let end = start.checked_add(size)?;
        let bytes = source.bytes().get(start..end)?;
        bytemuck::try_cast_slice::<u8, T>(bytes).ok()?;
        Some(Buf {
            repr: Repr::Borrowed {
                source,
                start,
                len,
                cast: bytemuck::cast_slice::<u8, T>,
            },
        })
    }
}

impl<T: Clone> Buf<T> {
    /// The values, mutably; a borrowed buffer is copied into an owned one first.
    pub fn make_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Borrowed { .. } = self.repr {
            self.repr = Repr::Owned(self.deref().to_vec());
        }
        match &mut self.repr {
            Repr::Owned(v) => v,
            Repr::Borrowed { .. } => unreachable!("converted to owned just above"),
        }
    }

    /// The values as a `Vec`, copied only when borrowed.
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            Repr::Owned(v) => v,
            Repr::Borrowed { .. } => self.deref().to_vec(),
        }
    }
}

impl<T> Deref for Buf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            Repr::Borrowed {
                source,
                start,
                len,
                cast,
            } => {
                let bytes = &source.bytes()[*start..*start + len * std::mem::size_of::<T>()];
                cast(bytes)
            }
        }
    }
}

impl<T> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Buf<T> {
        Buf {
            repr: Repr::Owned(v),
        }
    }
}

impl<T> FromIterator<T> for Buf<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Buf<T> {
        Buf::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Clone> Clone for Buf<T> {
    /// An owned buffer is copied; a borrowed one shares its source (it is never written).
    fn clone(&self) -> Buf<T> {
        match &self.repr {
            Repr::Owned(v) => Buf::from(v.clone()),
            Repr::Borrowed {
                source,
                start,
                len,
                cast,
            } => Buf {
                repr: Repr::Borrowed {
                    source: source.clone(),
                    start: *start,
                    len: *len,
                    cast: *cast,
                },
            },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.deref().fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Buf<T> {
    fn eq(&self, other: &Buf<T>) -> bool {
        self.deref() == other.deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Source(Vec<u64>);
    impl ByteSource for Source {
        fn bytes(&self) -> &[u8] {
            bytemuck::cast_slice(&self.0)
        }
    }

    #[test]
    fn borrows_aligned_ranges_and_copies_on_write() {
        let src: Arc<dyn ByteSource> = Arc::new(Source(vec![
            u64::from_le_bytes(
                [1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()]
                    .concat()
                    .try_into()
                    .unwrap(),
            ),
            0,
        ]));
        let mut b = Buf::<f32>::borrow(src.clone(), 0, 2).expect("aligned");
        assert!(b.is_borrowed());
        assert_eq!(&*b, &[1.0, 2.0]);
        assert_eq!(b.owned_bytes(), 0);
        let c = b.clone();
        b.make_mut()[0] = 5.0;
        assert!(!b.is_borrowed());
        assert_eq!(&*b, &[5.0, 2.0]);
        assert_eq!(&*c, &[1.0, 2.0], "the source is never written");
        assert_eq!(src.bytes()[..4], 1.0f32.to_le_bytes());
    }

    #[test]
    fn refuses_unaligned_or_out_of_range() {
        let src: Arc<dyn ByteSource> = Arc::new(Source(vec![0, 0]));
        assert!(Buf::<f32>::borrow(src.clone(), 1, 1).is_none());
        assert!(Buf::<f32>::borrow(src.clone(), 12, 2).is_none());
        assert!(Buf::<f64>::borrow(src.clone(), 0, usize::MAX).is_none());
        assert!(Buf::<u8>::borrow(src.clone(), 3, 5).is_some());
    }
}
