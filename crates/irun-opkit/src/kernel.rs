//! Shared machinery for kernels: taking ownership of an input buffer, parallel copies, the
//! split of work into tasks, typed access to index tensors, and the one primitive that lets
//! parallel tasks write to provably disjoint parts of one output.
//!
//! Every kernel runs inside the executor's rayon pool; `par::threads()` is the
//! `--threads` value. How work is split never changes a result: each output element is written
//! by exactly one task, in the same order as a sequential run.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use irun_tensor::{with_words, Storage, Tensor, Word, WordVec};

pub use crate::error::{first_error, try_with_capacity, try_zeroed};
pub use crate::par::{pieces, split_range, PAR_MIN_ELEMENTS};

/// The tensor behind `v`, without a copy when `v` is the only reference to values it owns
/// (the executor hands an op the only reference to an input nothing else reads); otherwise a
/// parallel copy (the values are shared with another tensor, or borrowed from the weights).
pub fn take_or_copy(v: Arc<Tensor>) -> Tensor {
    match Arc::try_unwrap(v) {
        Ok(t) if t.is_exclusive() => t,
        Ok(t) => par_clone(&t),
        Err(shared) => par_clone(&shared),
    }
}

/// A copy of `t` with values of its own, made by all threads for large tensors. Copy-like, so
/// it dispatches on the element width: four instantiations serve every type.
pub fn par_clone(t: &Tensor) -> Tensor {
    fn copy<W: Word>(v: &[W]) -> WordVec {
        W::into_word_vec(crate::par::map(v, |x| x))
    }
    let words = match t.words() {
        Some(w) if t.len() >= PAR_MIN_ELEMENTS => w,
        _ => return t.deep_clone(),
    };
    let copied = with_words!(words, w => copy(w));
    Tensor::from_words(t.element_type(), t.shape().to_vec(), copied)
        .expect("a copy has the original's type, width and length")
}

/// Reads an integer index tensor block by block as `i64`, so that kernels are generic over the
/// data type only. u64 values above `i64::MAX` read as `i64::MAX`, which is out of range for
/// every dimension and so is reported, not wrapped.
#[derive(Clone, Copy)]
pub enum IndexValues<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

/// An integer type index tensors are stored in, and its value as the `i64` every kernel
/// reads (a u64 above `i64::MAX` as `i64::MAX`, out of range for every dimension).
trait StoredIndex: Copy + Ord {
    fn to_i64(self) -> i64;
}

macro_rules! stored_index_by_from {
    ($($t:ty),*) => {$(
        impl StoredIndex for $t {
            #[inline(always)]
            fn to_i64(self) -> i64 {
                i64::from(self)
            }
        }
    )*};
}
stored_index_by_from!(i8, i16, i32, i64, u8, u16, u32);

impl StoredIndex for u64 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        i64::try_from(self).unwrap_or(i64::MAX)
    }
}

/// `$body` with `$v` bound to the stored slice, whichever integer type it is.
macro_rules! on_stored {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            IndexValues::I8($v) => $body,
            IndexValues::I16($v) => $body,
            IndexValues::I32($v) => $body,
            IndexValues::I64($v) => $body,
            IndexValues::U8($v) => $body,
            IndexValues::U16($v) => $body,
            IndexValues::U32($v) => $body,
            IndexValues::U64($v) => $body,
        }
    };
}

/// The index types models store, read as they are: a loop that widens each value as it goes
/// saves [`IndexValues::for_each_block`]'s pass that widens a block into `i64` first (8M i32
/// indices partitioned into a 32 MB max's buckets: 11.2 to 9.4 ms).
///
/// Sealed: only i32 and i64, so that a vector loop can read a block's values by
/// [`NativeIndex::WIDTH`] alone.
pub trait NativeIndex: Copy + PartialEq + Into<i64> + TryFrom<i64> + sealed::Sealed {
    const WIDTH: IndexWidth;
}
impl NativeIndex for i32 {
    const WIDTH: IndexWidth = IndexWidth::I32;
}
impl NativeIndex for i64 {
    const WIDTH: IndexWidth = IndexWidth::I64;
}

/// Which signed integer a [`NativeIndex`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexWidth {
    I32,
    I64,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// What [`IndexValues::for_each_native`] calls for each block: a loop monomorphised for each
/// [`NativeIndex`] type.
pub trait NativeBlocks {
    type Error;
    fn block<I: NativeIndex>(&mut self, start: usize, vals: &[I]) -> Result<(), Self::Error>;

    /// The most values the visitor wants in one block; it gets at most [`NATIVE_BLOCK`].
    /// Smaller blocks suit a visitor that converts each block's updates before its loop
    /// runs over them (`Widening` in the scatter crate).
    fn block_len(&self) -> usize {
        NATIVE_BLOCK
    }
}

/// Block length of [`IndexValues::for_each_native`] on i32 and i64 tensors, whose blocks
/// are slices, not copies: a visitor's work per block (the partition sets up a cursor per
/// list) is spread over more values (8M i32 indices partitioned into 32 lists: 9.9 to 8.5
/// ms with blocks of 4096 instead of 512).
pub const NATIVE_BLOCK: usize = 4096;

/// Block length for [`IndexValues::for_each_block`]: small enough to stay in L1.
pub const INDEX_BLOCK: usize = 512;

impl<'a> IndexValues<'a> {
    /// The values of an integer tensor; `None` for any other element type.
    pub fn of(t: &'a Tensor) -> Option<IndexValues<'a>> {
        Some(match t.storage() {
            Storage::I8(v) => IndexValues::I8(v),
            Storage::I16(v) => IndexValues::I16(v),
            Storage::I32(v) => IndexValues::I32(v),
            Storage::I64(v) => IndexValues::I64(v),
            Storage::U8(v) => IndexValues::U8(v),
            Storage::U16(v) => IndexValues::U16(v),
            Storage::U32(v) => IndexValues::U32(v),
            Storage::U64(v) => IndexValues::U64(v),
            _ => return None,
        })
    }

    pub fn len(&self) -> usize {
        on_stored!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value every index in `range` holds, if they are all equal (and `range` is not
    /// empty): one comparison pass on the stored type, no conversion.
    pub fn uniform(&self, range: Range<usize>) -> Option<i64> {
        fn same<T: StoredIndex>(s: &[T]) -> Option<i64> {
            let first = *s.first()?;
            s.iter().all(|&x| x == first).then(|| first.to_i64())
        }
        on_stored!(self, v => same(&v[range]))
    }

    /// The least and the greatest value in `range` (`None` if it is empty), in one pass on
    /// the stored type, vectorised; a u64 above `i64::MAX` counts as `i64::MAX`.
    pub fn min_max(&self, range: Range<usize>) -> Option<(i64, i64)> {
        #[inline(always)]
        fn fold<T: StoredIndex>(s: &[T]) -> Option<(i64, i64)> {
            let first = *s.first()?;
            let (lo, hi) = crate::simd::widest(
                #[inline(always)]
                || {
                    s.iter()
                        .fold((first, first), |(lo, hi), &x| (lo.min(x), hi.max(x)))
                },
            );
            Some((lo.to_i64(), hi.to_i64()))
        }
        on_stored!(self, v => fold(&v[range]))
    }

    /// [`crate::simd::prefetch_read`] of the values in `range`.
    pub fn prefetch(&self, range: Range<usize>) {
        on_stored!(self, v => crate::simd::prefetch_read(&v[range]))
    }

    /// Converts `range` into `buf` (whose length must equal the range's).
    pub fn read(&self, range: Range<usize>, buf: &mut [i64]) {
        // In the widest instruction set: one sign extension per vector (the baseline's
        // SSE2 has none, and 8M i32 indices took 4 ms to widen).
        #[inline(always)]
        fn conv<T: StoredIndex>(src: &[T], buf: &mut [i64]) {
            crate::simd::widest(
                #[inline(always)]
                || {
                    for (d, &s) in buf.iter_mut().zip(src) {
                        *d = s.to_i64();
                    }
                },
            )
        }
        if let IndexValues::I64(v) = self {
            buf.copy_from_slice(&v[range]);
            return;
        }
        on_stored!(self, v => conv(&v[range], buf))
    }

    /// Calls `f(first_position, values)` for consecutive blocks of `range`.
    pub fn for_each_block<E>(
        &self,
        range: Range<usize>,
        mut f: impl FnMut(usize, &[i64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut start = range.start;
        if let IndexValues::I64(v) = self {
            // Already i64: blocks are slices of the tensor, no copy.
            for chunk in v[range].chunks(INDEX_BLOCK) {
                f(start, chunk)?;
                start += chunk.len();
            }
            return Ok(());
        }
        // Callers walk short lines too (one row's columns, millions of calls): a short range
        // gets a short buffer, not 4 KiB to zero.
        const SHORT: usize = 64;
        if range.len() <= SHORT {
            let mut buf = [0i64; SHORT];
            let b = &mut buf[..range.len()];
            self.read(range, b);
            return f(start, b);
        }
        let mut buf = [0i64; INDEX_BLOCK];
        while start < range.end {
            let end = (start + INDEX_BLOCK).min(range.end);
            let b = &mut buf[..end - start];
            self.read(start..end, b);
            f(start, b)?;
            start = end;
        }
        Ok(())
    }

    /// Calls `f.block(first_position, values)` for consecutive blocks of `range`: slices of
    /// the tensor itself of at most [`NATIVE_BLOCK`] values when it holds i32 or i64, else
    /// the values widened to `i64` as [`IndexValues::for_each_block`] gives them.
    pub fn for_each_native<F: NativeBlocks>(
        &self,
        range: Range<usize>,
        f: &mut F,
    ) -> Result<(), F::Error> {
        fn blocks<I: NativeIndex, F: NativeBlocks>(
            v: &[I],
            mut start: usize,
            f: &mut F,
        ) -> Result<(), F::Error> {
            let len = f.block_len().clamp(1, NATIVE_BLOCK);
            for chunk in v.chunks(len) {
                f.block(start, chunk)?;
                start += chunk.len();
            }
            Ok(())
        }
        match self {
            IndexValues::I32(v) => blocks(&v[range.clone()], range.start, f),
            IndexValues::I64(v) => blocks(&v[range.clone()], range.start, f),
            _ => self.for_each_block(range, |start, vals| f.block(start, vals)),
        }
    }

    /// All values as `i64` (for small index tensors such as ScatterUpdate's).
    pub fn to_vec(&self) -> Vec<i64> {
        let mut v = vec![0; self.len()];
        self.read(0..self.len(), &mut v);
        v
    }
}

/// Index value `v` on a dim of `dim` with a negative value counted from the end (`v + dim`),
/// without a branch, so that loops over many indices vectorise. A value below `-dim` stays
/// negative, which the caller's range test on `usize` sees as huge: out of range.
#[inline(always)]
pub fn count_from_end(v: i64, dim: i64) -> i64 {
    v + ((v >> 63) & dim)
}

/// Row-major coordinates of flat position `pos` in `shape` (for error messages).
pub fn coordinates(shape: &[usize], mut pos: usize) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for (ci, &d) in c.iter_mut().zip(shape).rev() {
        if d > 0 {
            *ci = pos % d;
            pos /= d;
        }
    }
    c
}

/// One output buffer shared by parallel tasks that each write a different set of elements.
///
/// Safe code cannot express "task A writes elements {i : i mod 512 < 256}, task B the rest",
/// which is what a kernel splitting an output along an inner dimension needs. This wrapper
/// allows it: each task accesses the buffer through its own [`Part`], whose `get`/`set` are
/// `unsafe` with one proof obligation: **no element is accessed through two different parts
/// while one of them may write it**. Two threads touching one element would be a data race,
/// which is undefined behaviour whatever the values; the bounds checks only keep accesses
/// inside the slice. In builds with debug assertions (the tests) every access records its
/// part, and an element reached through a second part panics naming both, so a broken
/// partition fails the test suite instead of racing silently.
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    /// Per element: 0 while untouched, else 1 + the task of the part that touched it.
    #[cfg(debug_assertions)]
    owners: Vec<std::sync::atomic::AtomicUsize>,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a DisjointSlice is built from a `&mut [T]` it borrows for 'a, so no one else can touch
// the memory meanwhile; sending or sharing it across threads is sound for `T: Send` given the
// disjoint-access contract of `Part::get`/`Part::set` (which are `unsafe` for exactly that
// reason).
unsafe impl<T: Send> Send for DisjointSlice<'_, T> {}
unsafe impl<T: Send> Sync for DisjointSlice<'_, T> {}

impl<'a, T: Copy> DisjointSlice<'a, T> {
    pub fn new(s: &'a mut [T]) -> DisjointSlice<'a, T> {
        DisjointSlice {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            #[cfg(debug_assertions)]
            owners: (0..s.len())
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
            _borrow: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The access of task `task`: the elements it reaches must be reached by no other task.
    pub fn part(&self, task: usize) -> Part<'_, 'a, T> {
        Part {
            ptr: self.ptr,
            len: self.len,
            slice: self,
            task,
        }
    }

    /// Panics if element `i` was reached through a part of another task (debug builds).
    #[inline]
    fn claim(&self, i: usize, task: usize) {
        #[cfg(debug_assertions)]
        {
            use std::sync::atomic::Ordering::Relaxed;
            let me = task + 1;
            if let Err(other) = self.owners[i].compare_exchange(0, me, Relaxed, Relaxed) {
                assert!(
                    other == me,
                    "DisjointSlice: element {i} is reached by tasks {} and {task}",
                    other - 1
                );
            }
        }
        #[cfg(not(debug_assertions))]
        let _ = (i, task);
    }
}

/// The panic of [`Part::update`], out of line so that the loop around it keeps no
/// registers or stores for it.
#[cold]
#[inline(never)]
fn out_of_bounds(i: usize, len: usize) -> ! {
    panic!("index {i} out of bounds of {len}")
}

/// One task's access to a [`DisjointSlice`]. It keeps its own copy of the pointer and
/// length: read through `slice` they would be reloaded after every write, which may alias
/// anything as far as the compiler knows.
pub struct Part<'s, 'a, T> {
    ptr: *mut T,
    len: usize,
    slice: &'s DisjointSlice<'a, T>,
    task: usize,
}

impl<T: Copy> Part<'_, '_, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// [`crate::simd::prefetch_write_ptr`] of element `i`: a hint, which touches no element.
    #[inline(always)]
    pub fn prefetch_write(&self, i: usize) {
        crate::simd::prefetch_write_ptr(self.ptr.wrapping_add(i));
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads element `i` (panics if `i` is out of bounds).
    ///
    /// # Safety
    /// No part of another task writes element `i` while this part exists.
    #[inline]
    pub unsafe fn get(&self, i: usize) -> T {
        assert!(i < self.len, "index {i} out of bounds of {}", self.len);
        self.slice.claim(i, self.task);
        // SAFETY: `i < len`, so the pointer (the slice's own) is inside the borrowed slice;
        // the caller guarantees no concurrent write to element `i`.
        unsafe { *self.ptr.add(i) }
    }

    /// Replaces element `i` with `f` of it (panics if `i` is out of bounds): one bounds
    /// test where [`Part::get`] then [`Part::set`] make two, each keeping the index aside
    /// for its panic message (a store per element in a read-modify-write loop).
    ///
    /// # Safety
    /// No part of another task reads or writes element `i` while this part exists.
    #[inline(always)]
    pub unsafe fn update(&self, i: usize, f: impl FnOnce(T) -> T) {
        if i >= self.len {
            out_of_bounds(i, self.len);
        }
        self.slice.claim(i, self.task);
        // SAFETY: `i < len`, so the pointer (the slice's own) is inside the borrowed slice;
        // the caller guarantees no concurrent access to element `i`.
        unsafe {
            let p = self.ptr.add(i);
            *p = f(*p);
        }
    }

    /// Writes element `i` (panics if `i` is out of bounds).
    ///
    /// # Safety
    /// No part of another task reads or writes element `i` while this part exists.
    #[inline]
    pub unsafe fn set(&self, i: usize, v: T) {
        assert!(i < self.len, "index {i} out of bounds of {}", self.len);
        self.slice.claim(i, self.task);
        // SAFETY: `i < len`, so the pointer (the slice's own) is inside the borrowed slice;
        // the caller guarantees no concurrent access to element `i`.
        unsafe { *self.ptr.add(i) = v }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_range_covers_everything_once() {
        for n in [0, 1, 5, 17, 1000] {
            for k in 1..9 {
                let r = split_range(n, k);
                assert_eq!(r.first().unwrap().start, 0);
                assert_eq!(r.last().unwrap().end, n);
                assert!(r.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    /// Native blocks tile the range in order, none longer than the visitor asks for or
    /// than [`NATIVE_BLOCK`], each starting at its first position.
    #[test]
    fn native_blocks_follow_the_visitors_length() {
        struct Record(usize, Vec<(usize, usize, i64)>);
        impl NativeBlocks for Record {
            type Error = ();
            fn block<I: NativeIndex>(&mut self, start: usize, vals: &[I]) -> Result<(), ()> {
                self.1.push((start, vals.len(), vals[0].into()));
                Ok(())
            }
            fn block_len(&self) -> usize {
                self.0
            }
        }
        let t = Tensor::from_i32(vec![10_000], (0..10_000).collect()).unwrap();
        let iv = IndexValues::of(&t).unwrap();
        for (asked, most) in [(512, 512), (usize::MAX, NATIVE_BLOCK), (0, 1)] {
            let mut r = Record(asked, Vec::new());
            let range = 3..if asked == 0 { 40 } else { 9_999 };
            iv.for_each_native(range.clone(), &mut r).unwrap();
            let mut at = range.start;
            for &(start, len, first) in &r.1 {
                assert!(
                    (start, first) == (at, at as i64) && len <= most,
                    "{asked}: {r:?}",
                    r = r.1
                );
                at += len;
            }
            assert_eq!(at, range.end);
            assert!(r.1.iter().rev().skip(1).all(|b| b.1 == most), "{asked}");
        }
    }

    #[test]
    fn index_values_read_every_width_and_clamp_huge_u64() {
        let t = Tensor::from_u64(vec![3], vec![1, u64::MAX, 7]).unwrap();
        assert_eq!(IndexValues::of(&t).unwrap().to_vec(), vec![1, i64::MAX, 7]);
        let t = Tensor::from_i8(vec![2], vec![-3, 4]).unwrap();
        assert_eq!(IndexValues::of(&t).unwrap().to_vec(), vec![-3, 4]);
        assert!(IndexValues::of(&Tensor::from_f32(vec![1], vec![0.0]).unwrap()).is_none());
    }

    /// Every stored width, on a range that starts and ends inside the tensor, long enough
    /// for the vector loop; an empty range has none; a huge u64 counts as `i64::MAX`.
    #[test]
    fn min_max_reads_the_stored_type() {
        let vals: Vec<i64> = (0..300).map(|i| (i * 37) % 101 - 50).collect();
        let want = |r: Range<usize>| {
            let s = &vals[r];
            Some((*s.iter().min().unwrap(), *s.iter().max().unwrap()))
        };
        let i32s = Tensor::from_i32(vec![300], vals.iter().map(|&v| v as i32).collect()).unwrap();
        let i64s = Tensor::from_i64(vec![300], vals.clone()).unwrap();
        let i8s = Tensor::from_i8(vec![300], vals.iter().map(|&v| v as i8).collect()).unwrap();
        for t in [&i32s, &i64s, &i8s] {
            let iv = IndexValues::of(t).unwrap();
            assert_eq!(iv.min_max(3..297), want(3..297));
            assert_eq!(iv.min_max(10..11), want(10..11));
            assert_eq!(iv.min_max(5..5), None);
        }
        let t = Tensor::from_u64(vec![3], vec![4, u64::MAX, 2]).unwrap();
        assert_eq!(
            IndexValues::of(&t).unwrap().min_max(0..3),
            Some((2, i64::MAX))
        );
    }

    #[test]
    fn negative_values_count_from_the_end() {
        assert_eq!(count_from_end(3, 10), 3);
        assert_eq!(count_from_end(0, 10), 0);
        assert_eq!(count_from_end(-1, 10), 9);
        assert_eq!(count_from_end(-10, 10), 0);
        assert_eq!(count_from_end(-11, 10), -1);
        assert_eq!(count_from_end(i64::MIN, 10), i64::MIN + 10);
        assert_eq!(count_from_end(i64::MAX, 10), i64::MAX);
    }

    #[test]
    fn coordinates_are_row_major() {
        assert_eq!(coordinates(&[2, 3, 4], 23), vec![1, 2, 3]);
        assert_eq!(coordinates(&[2, 3, 4], 5), vec![0, 1, 1]);
        assert_eq!(coordinates(&[], 0), Vec::<usize>::new());
    }

    #[test]
    fn disjoint_slice_parallel_writes_to_interleaved_elements() {
        // Two tasks write the even and the odd elements of one buffer: the pattern safe code
        // cannot split, and the one the scatter kernels use when they split an inner dimension.
        let mut v = vec![0u32; 10_000];
        let d = DisjointSlice::new(&mut v);
        crate::par::for_each_task(2, &|parity| {
            let part = d.part(parity);
            for i in (parity..part.len()).step_by(2) {
                // SAFETY: task `parity` touches only elements with i % 2 == parity.
                unsafe { part.set(i, i as u32 * 2 + parity as u32) };
            }
        });
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as u32 * 2 + (i % 2) as u32));
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn disjoint_slice_checks_bounds() {
        let mut v = vec![0u8; 4];
        let d = DisjointSlice::new(&mut v);
        // SAFETY: single-threaded.
        unsafe { d.part(0).set(4, 1) };
    }

    /// `update` reads, changes and writes back the element it names, in every task's own
    /// elements, and panics past the end as `set` does.
    #[test]
    fn disjoint_slice_updates_in_place() {
        let mut v: Vec<u32> = (0..1000).collect();
        let d = DisjointSlice::new(&mut v);
        crate::par::for_each_task(2, &|parity| {
            let part = d.part(parity);
            for i in (parity..part.len()).step_by(2) {
                // SAFETY: task `parity` touches only elements with i % 2 == parity.
                unsafe { part.update(i, |x| x * 3 + parity as u32) };
            }
        });
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as u32 * 3 + (i % 2) as u32));
        let mut w = vec![0u8; 4];
        let d = DisjointSlice::new(&mut w);
        let past_end = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: single-threaded.
            unsafe { d.part(0).update(4, |x| x + 1) }
        }));
        assert!(past_end.is_err());
        assert_eq!(w, [0; 4]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "element 2 is reached by tasks 0 and 1")]
    fn a_broken_partition_panics_in_debug_builds() {
        let mut v = vec![0u8; 4];
        let d = DisjointSlice::new(&mut v);
        // SAFETY: single-threaded, so no race; the partition is broken on purpose and the
        // check must notice it even without a second thread.
        unsafe {
            d.part(0).set(2, 1);
            d.part(0).get(2);
            d.part(1).get(2);
        }
    }
}
