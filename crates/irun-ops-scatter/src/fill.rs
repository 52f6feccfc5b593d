//! An output that a kernel fills from the data as it applies the updates, instead of a copy of
//! the data made first and updated after.
//!
//! When the op does not own its data (an input another layer or the caller still holds), the
//! output must start as a copy. Copied whole first, a large output is written to memory by the
//! copy, then read back and written again by the updates: for a 64 MB ScatterNDUpdate on
//! sorted rows the copy was a third of the run. A [`Window`] copies each stretch of the data
//! just before the updates first reach it, while it is still in cache, so the output goes to
//! memory once.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::kernel::PAR_MIN_ELEMENTS;
use crate::op::OpError;
use crate::par;
use irun_opkit::stream::STREAM_MIN_BYTES;

/// Elements a [`Window`] copies past the edge it grows at, at least: updates that walk the
/// output in order then find the next few lines copied, and the copies are whole runs of
/// lines, not one slice at a time.
const COPY_AHEAD: usize = 1024;

/// Slots of a new output (a contiguous piece of it) with the data values that belong there.
/// Every slot written through it is counted in `written`, once; the owner of the whole
/// output checks the count before it treats the slots as values ([`FillFrom::new`]).
pub struct FillFrom<'a, T> {
    slots: &'a mut [MaybeUninit<T>],
    src: &'a [T],
    written: &'a AtomicUsize,
}

impl<'a, T: Copy + Send + Sync> FillFrom<'a, T> {
    /// The output `slots`, to be filled from `src` (the same length), counting written slots
    /// in `written`. Once a kernel is done, `written` equal to the length proves every slot
    /// written: the pieces are disjoint and each counts a slot only when it first writes it.
    pub fn new(slots: &'a mut [MaybeUninit<T>], src: &'a [T], written: &'a AtomicUsize) -> Self {
        assert_eq!(slots.len(), src.len(), "an output the data's length");
        FillFrom {
            slots,
            src,
            written,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The first `mid` elements and the rest, as two pieces.
    pub fn split_at(self, mid: usize) -> (Self, Self) {
        let (a, b) = self.slots.split_at_mut(mid);
        let (sa, sb) = self.src.split_at(mid);
        let written = self.written;
        (
            FillFrom {
                slots: a,
                src: sa,
                written,
            },
            FillFrom {
                slots: b,
                src: sb,
                written,
            },
        )
    }

    /// Pieces of the given lengths, in order (their sum must be the length).
    pub fn split_lengths(self, lengths: impl IntoIterator<Item = usize>) -> Vec<Self> {
        let mut pieces = Vec::new();
        let mut rest = self;
        for len in lengths {
            let (piece, tail) = rest.split_at(len);
            pieces.push(piece);
            rest = tail;
        }
        assert!(rest.is_empty(), "pieces cover the output");
        pieces
    }

    /// The data this output is filled from.
    pub fn src(&self) -> &'a [T] {
        self.src
    }

    /// Runs `f` on pieces of the given lengths (in order; their sum must be the length) and
    /// returns what it returns, with the whole output as values if the pieces wrote every
    /// slot: for a kernel that may have to start again on the whole once its pieces are done.
    pub fn in_pieces<R>(
        self,
        lengths: impl IntoIterator<Item = usize>,
        f: impl for<'b> FnOnce(Vec<FillFrom<'b, T>>) -> R,
    ) -> (R, Option<&'a mut [T]>) {
        let n = self.len();
        // The pieces count into their own counter, so that siblings of this piece writing
        // into `self.written` at the same time cannot make it look whole.
        let local = AtomicUsize::new(0);
        let r = f(FillFrom::new(&mut *self.slots, self.src, &local).split_lengths(lengths));
        let wrote = local.load(Ordering::Relaxed);
        self.written.fetch_add(wrote, Ordering::Relaxed);
        if wrote != n {
            return (r, None);
        }
        // SAFETY: the pieces are disjoint and each counted a slot in `local` only the first
        // time it wrote it, so a count of `n` means every slot was written; the pieces'
        // borrows ended with `f`. `MaybeUninit<T>` has `T`'s layout, and the slots are
        // borrowed for `'a` as `self.slots` was.
        (
            r,
            Some(unsafe { &mut *(self.slots as *mut [MaybeUninit<T>] as *mut [T]) }),
        )
    }

    /// Everything copied, by all threads when large: the output as values. From
    /// [`STREAM_MIN_BYTES`] on with streaming stores (measured on a 2-core Zen 4, 2 threads,
    /// medians of 12 and 5 alternating runs: 8M i32 maxima onto one element of a 32 MB
    /// output, the copy most of the run, 4.36 to 3.59 ms; a ScatterNDUpdate sum onto a 64
    /// MB output 16.3 to 15.1 ms).
    pub fn copy_all(self) -> &'a mut [T] {
        let src = self.src;
        let stream = std::mem::size_of_val(src) >= STREAM_MIN_BYTES;
        par::for_each_split_mut(self.slots, PAR_MIN_ELEMENTS, &|start, chunk| {
            let from = &src[start..start + chunk.len()];
            match stream {
                true => irun_opkit::stream::copy_streaming(chunk, from),
                false => {
                    chunk.write_copy_of_slice(from);
                }
            }
        });
        self.written.fetch_add(src.len(), Ordering::Relaxed);
        // SAFETY: `for_each_split_mut` runs the closure over consecutive chunks covering the
        // whole of `slots` (or panics, and this is never reached), and the closure writes
        // every slot of its chunk. `MaybeUninit<T>` has `T`'s layout, so the slots are
        // `len` initialised `T`s, borrowed for `'a` as `self.slots` was.
        unsafe { &mut *(self.slots as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Everything copied by the calling thread: the output as values (for a task that owns
    /// the piece and works on it next, while it is in cache).
    pub fn copy_here(self) -> &'a mut [T] {
        self.slots.write_copy_of_slice(self.src);
        self.written.fetch_add(self.src.len(), Ordering::Relaxed);
        // SAFETY: every slot was just written; `MaybeUninit<T>` has `T`'s layout, and the
        // slots are borrowed for `'a` as `self.slots` was.
        unsafe { &mut *(self.slots as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// A window on the piece that starts empty and grows as the kernel asks for spans. It
    /// takes the piece: a slot is counted by one window (or one copy) only.
    pub fn window(self) -> Window<'a, T> {
        Window {
            fill: self,
            lo: 0,
            hi: 0,
        }
    }
}

/// A new vector filled from `src` by `kernel`, which gets the whole of it as one
/// [`FillFrom`]: the vector once every slot was written, an error if the kernel failed or
/// left a slot unwritten.
pub fn filled<T: Copy + Send + Sync>(
    src: &[T],
    kernel: impl FnOnce(FillFrom<'_, T>) -> Result<(), OpError>,
) -> Result<Vec<T>, OpError> {
    let n = src.len();
    let mut out: Vec<T> = crate::kernel::try_with_capacity(n)?;
    let written = AtomicUsize::new(0);
    kernel(FillFrom::new(
        &mut out.spare_capacity_mut()[..n],
        src,
        &written,
    ))?;
    if written.load(Ordering::Relaxed) != n {
        return Err(OpError::new(
            crate::op::codes::INTERNAL,
            "internal error: a scatter kernel left part of its output unwritten",
        ));
    }
    // SAFETY: the pieces of a `FillFrom` are disjoint and each counts a slot in `written`
    // only the first time it writes it, so a count of `n` means every one of the first `n`
    // slots of the capacity was written. `T: Copy`, no drops.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// The written part of a [`FillFrom`]: one stretch `lo..hi` that only grows, each growth
/// copying the data into the slots it adds, so a slot is written (and counted) exactly once
/// before it is first read. [`Window::finish`] copies what no span reached.
pub struct Window<'a, T> {
    fill: FillFrom<'a, T>,
    lo: usize,
    hi: usize,
}

impl<T: Copy + Send + Sync> Window<'_, T> {
    /// The piece's length, written or not.
    pub fn len(&self) -> usize {
        self.fill.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fill.is_empty()
    }

    /// The data and the slots of the piece's elements `r` (cut to the piece), for hints
    /// that fetch them before a span grows the window over them.
    pub fn upcoming(&self, r: Range<usize>) -> Upcoming {
        let len = self.fill.len();
        let (a, b) = (r.start.min(len), r.end.min(len));
        Upcoming {
            src: self.fill.src.as_ptr().wrapping_add(a).cast(),
            slots: self.fill.slots.as_ptr().wrapping_add(a).cast(),
            bytes: (b - a) * std::mem::size_of::<T>(),
        }
    }

    /// Copies the data into every slot the spans did not reach.
    pub fn finish(mut self) {
        let len = self.fill.len();
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        }
        self.copy(0..self.lo);
        self.copy(self.hi..len);
    }

    fn copy(&mut self, r: Range<usize>) {
        let n = r.len();
        self.fill.slots[r.clone()].write_copy_of_slice(&self.fill.src[r]);
        self.fill.written.fetch_add(n, Ordering::Relaxed);
    }
}

/// Elements a [`Window`] will copy soon ([`Window::upcoming`]): where their data and their
/// slots start, and their bytes. For prefetch hints only: nothing reads or writes through
/// these pointers.
#[derive(Clone, Copy, Debug)]
pub struct Upcoming {
    pub src: *const u8,
    pub slots: *const u8,
    pub bytes: usize,
}

impl Upcoming {
    /// Nothing to fetch.
    pub const NONE: Upcoming = Upcoming {
        src: std::ptr::null(),
        slots: std::ptr::null(),
        bytes: 0,
    };
}

/// The output elements a kernel's apply pass reaches: plain values (the data, updated in
/// place) or a [`Window`] that copies the data in as it goes.
pub trait Span<T> {
    /// The elements `r`, ready to be updated.
    fn span(&mut self, r: Range<usize>) -> &mut [T];
    /// Where element 0 is in memory, for prefetch hints (never read through).
    fn base_ptr(&self) -> *const T;
}

impl<T> Span<T> for &mut [T] {
    #[inline]
    fn span(&mut self, r: Range<usize>) -> &mut [T] {
        &mut self[r]
    }
    fn base_ptr(&self) -> *const T {
        self.as_ptr()
    }
}

impl<T: Copy + Send + Sync> Span<T> for Window<'_, T> {
    /// The elements `r` of the piece, written: the window first grows over `r` (and at least
    /// `COPY_AHEAD` past the edge it grows at), copying the data into the slots it adds.
    /// Spans that move through the piece in order therefore copy it front to back (or back
    /// to front) just ahead of the updates; scattered spans copy the stretch between them.
    #[inline(always)]
    fn span(&mut self, r: Range<usize>) -> &mut [T] {
        // Most spans (a ScatterNDUpdate asks for one per tuple) lie inside what is written:
        // only the others take the call that grows the window.
        if !(self.lo <= r.start && r.start <= r.end && r.end <= self.hi) {
            self.grow(r.clone());
        }
        let written = &mut self.fill.slots[r];
        // SAFETY: `r` lies inside `lo..hi` (it did, or `grow` made it so), every slot of
        // which was written by `copy` when the window grew over it (the window only grows,
        // and each growth copies exactly the slots it adds); `MaybeUninit<T>` has `T`'s
        // layout, and the `&mut self` borrow keeps the slots from being reached another way
        // while the slice lives.
        unsafe { &mut *(written as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Where the piece starts in memory, for prefetch hints (never read through).
    fn base_ptr(&self) -> *const T {
        self.fill.slots.as_ptr().cast()
    }
}

impl<T: Copy + Send + Sync> Window<'_, T> {
    /// Grows the window over `r` (and at least `COPY_AHEAD` past the edge it grows at),
    /// copying the data into the slots it adds. Panics if `r` is not inside the piece (a bug
    /// in the caller).
    #[inline(never)]
    fn grow(&mut self, r: Range<usize>) {
        let len = self.fill.len();
        assert!(r.start <= r.end && r.end <= len, "a span inside the piece");
        if self.lo == self.hi {
            // Empty: start where the first span does.
            self.lo = r.start;
            self.hi = r.start;
        }
        if r.start < self.lo {
            let lo = r.start.min(self.lo.saturating_sub(COPY_AHEAD));
            self.copy(lo..self.lo);
            self.lo = lo;
        }
        if r.end > self.hi {
            let hi = r.end.max(self.hi.saturating_add(COPY_AHEAD).min(len));
            self.copy(self.hi..hi);
            self.hi = hi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills a 5000-element output through windows on three pieces with the given spans,
    /// adding 1000 to every element a span reaches, and checks each element and the count.
    fn fill_with_spans(spans: &[(usize, Range<usize>)]) -> Vec<i64> {
        let src: Vec<i64> = (0..5000).collect();
        let mut out: Vec<i64> = Vec::with_capacity(src.len());
        let written = AtomicUsize::new(0);
        let fill = FillFrom::new(&mut out.spare_capacity_mut()[..5000], &src, &written);
        let mut windows: Vec<Window<'_, i64>> = fill
            .split_lengths([1500, 2500, 1000])
            .into_iter()
            .map(FillFrom::window)
            .collect();
        for (piece, r) in spans {
            for v in windows[*piece].span(r.clone()) {
                *v += 1000;
            }
        }
        windows.into_iter().for_each(Window::finish);
        assert_eq!(
            written.load(Ordering::Relaxed),
            5000,
            "every slot written once"
        );
        // SAFETY: the count shows all 5000 slots written (pieces are disjoint; each counts a
        // slot once).
        unsafe { out.set_len(5000) };
        out
    }

    #[test]
    fn every_slot_is_copied_once_whatever_the_order_of_spans() {
        let orders: [&[(usize, Range<usize>)]; 5] = [
            &[(0, 10..20), (0, 20..40), (1, 2400..2500)],
            // Spans inside what is written (the fast path), again and empty, then growth.
            &[
                (0, 100..200),
                (0, 150..160),
                (0, 150..150),
                (0, 120..130),
                (0, 1499..1500),
                (0, 1400..1450),
                (2, 500..500),
                (2, 400..401),
            ],
            &[(1, 2000..2010), (1, 5..8), (2, 999..1000), (2, 0..1)],
            &[(0, 1400..1500), (0, 1300..1400), (0, 0..3)],
            &[],
        ];
        for spans in orders {
            let out = fill_with_spans(spans);
            let mut expected: Vec<i64> = (0..5000).collect();
            let starts = [0, 1500, 4000];
            for (piece, r) in spans {
                for e in &mut expected[starts[*piece] + r.start..starts[*piece] + r.end] {
                    *e += 1000;
                }
            }
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn a_window_dropped_unfinished_leaves_the_count_short() {
        let src = vec![1u8; 5000];
        let mut out: Vec<u8> = Vec::with_capacity(5000);
        let written = AtomicUsize::new(0);
        {
            let mut w =
                FillFrom::new(&mut out.spare_capacity_mut()[..5000], &src, &written).window();
            w.span(0..1)[0] = 7;
            // Dropped here, never finished.
        }
        // The span and the copy ahead of it, not the rest.
        assert_eq!(written.load(Ordering::Relaxed), COPY_AHEAD);
    }

    #[test]
    fn in_pieces_gives_the_whole_back_only_when_every_slot_was_written() {
        let src: Vec<u16> = (0..3000).collect();
        for finish_all in [true, false] {
            let mut out: Vec<u16> = Vec::with_capacity(src.len());
            let written = AtomicUsize::new(0);
            let fill = FillFrom::new(&mut out.spare_capacity_mut()[..3000], &src, &written);
            let (spans, whole) = fill.in_pieces([1000, 2000], |pieces| {
                let mut spans = 0;
                for (k, piece) in pieces.into_iter().enumerate() {
                    let mut w = piece.window();
                    w.span(10..20)[0] = 7;
                    spans += 1;
                    if finish_all || k == 0 {
                        w.finish();
                    }
                }
                spans
            });
            assert_eq!(spans, 2);
            match whole {
                Some(values) => {
                    assert!(finish_all);
                    let mut want = src.clone();
                    (want[10], want[1010]) = (7, 7);
                    assert_eq!(values, &want[..]);
                    assert_eq!(written.load(Ordering::Relaxed), 3000);
                }
                None => {
                    assert!(!finish_all);
                    // The first piece whole, the second its window (a span and the copy ahead).
                    assert_eq!(written.load(Ordering::Relaxed), 1000 + COPY_AHEAD);
                }
            }
        }
    }

    #[test]
    fn copy_all_copies_everything() {
        copy_all_of(70_000);
        // Past the streaming threshold, and not a multiple of the 16-byte blocks.
        copy_all_of(STREAM_MIN_BYTES / 4 + 3);
    }

    fn copy_all_of(n: usize) {
        let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut out: Vec<f32> = Vec::with_capacity(src.len());
        let written = AtomicUsize::new(0);
        let fill = FillFrom::new(&mut out.spare_capacity_mut()[..src.len()], &src, &written);
        let values = fill.copy_all();
        assert_eq!(values, &src[..]);
        assert_eq!(written.load(Ordering::Relaxed), src.len());
    }
}
