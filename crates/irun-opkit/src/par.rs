//! The one parallel driver every kernel goes through.
//!
//! Kernels are generic over element type (and the scatter kernels over reduction too). If each
//! of them called rayon's iterator adaptors, every (kernel, type, reduction) triple would get its
//! own copy of rayon's bridge and splitter machinery: over a thousand copies, minutes of
//! compile time and a 270 MB rlib for eleven ops. Here the tasks are `&dyn Fn`, so rayon is
//! instantiated once for the whole crate and only the kernels' inner loops are monomorphised.
//!
//! Small work stays on the calling thread: a task count of one, or a pool of one thread, never
//! touches rayon, so dispatching a small op costs no thread hand-off.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::error::{first_error, OpError};

/// Below this many elements a kernel runs on the calling thread: spawning costs more.
pub const PAR_MIN_ELEMENTS: usize = 1 << 15;

/// How many pieces to cut `n` units of work into: a few per thread so uneven pieces balance,
/// one when the work is small or there is one thread.
pub fn pieces(n: usize, min_per_piece: usize) -> usize {
    pieces_for(n, min_per_piece, threads())
}

/// [`pieces`] for `threads` threads.
pub fn pieces_for(n: usize, min_per_piece: usize, threads: usize) -> usize {
    if threads <= 1 || n < 2 * min_per_piece.max(1) {
        return 1;
    }
    (n / min_per_piece.max(1)).clamp(1, threads * 4)
}

/// `0..n` cut into `k` contiguous ranges whose lengths differ by at most one.
pub fn split_range(n: usize, k: usize) -> Vec<Range<usize>> {
    let k = k.clamp(1, n.max(1));
    (0..k).map(|i| (i * n / k)..((i + 1) * n / k)).collect()
}

/// What a fallible task returns: the position (row-major, in the kernel's own numbering) and
/// error of the first problem it found.
pub type TaskResult<T = ()> = Result<T, (usize, OpError)>;

/// Worker threads of the pool the caller runs in (`--threads`). Outside any pool (constant
/// folding during inference, a library user calling a kernel directly) and inside [`alone`]
/// it is 1: kernels then run on the calling thread and never start rayon's global pool.
pub fn threads() -> usize {
    if rayon::current_thread_index().is_none() || ALONE.get() {
        return 1;
    }
    rayon::current_num_threads()
}

thread_local! {
    /// Set while [`alone`] runs its closure on this thread.
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every parallel loop of this module inside it on the calling thread
/// ([`threads`] is 1 there): for a kernel whose whole work is less than what sharing it out
/// costs (another thread's wake-up or steal, per-task buffers), which on a busy host can
/// be the other thread's whole time slice. The loops stay on this thread, so the flag is
/// this thread's alone; it is restored when `f` returns or panics.
pub fn alone<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ALONE.set(self.0);
        }
    }
    let _restore = Restore(ALONE.replace(true));
    f()
}

/// Runs `task(i)` for every `i` in `0..n`, spread over the current pool.
pub fn for_each_task(n: usize, task: &(dyn Fn(usize) + Sync)) {
    if n <= 1 || threads() <= 1 {
        (0..n).for_each(task);
        return;
    }
    (0..n).into_par_iter().for_each(task);
}

/// As [`for_each_task`] for fallible tasks: `Err((position, error))` from a task; the error
/// with the smallest position wins, so the error reported never depends on the thread count.
pub fn try_for_each_task(
    n: usize,
    task: &(dyn Fn(usize) -> TaskResult + Sync),
) -> Result<(), OpError> {
    let first: Mutex<Option<(usize, OpError)>> = Mutex::new(None);
    for_each_task(n, &|i| {
        if let Err((pos, e)) = task(i) {
            let mut slot = first.lock().unwrap_or_else(|p| p.into_inner());
            if slot.as_ref().is_none_or(|(p, _)| pos < *p) {
                *slot = Some((pos, e));
            }
        }
    });
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Calls `f(range)` for contiguous ranges covering `0..len`, each at least `grain` long (but
/// the last), a few per thread; one range on the calling thread when `len` is small.
pub fn for_each_range(len: usize, grain: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
    let ranges = split_range(len, pieces(len, grain));
    for_each_task(ranges.len(), &|i| f(ranges[i].clone()));
}

/// Runs `f(i, &mut items[i])` for every item, in parallel; each task gets exclusive access to
/// its own item (the lock is never contended: one task per item).
pub fn for_each_mut<S: Send>(items: &mut [S], f: &(dyn Fn(usize, &mut S) + Sync)) {
    let cells: Vec<Mutex<&mut S>> = items.iter_mut().map(Mutex::new).collect();
    for_each_task(cells.len(), &|i| {
        let mut item = cells[i].lock().unwrap_or_else(|p| p.into_inner());
        f(i, &mut item)
    });
}

/// As [`for_each_mut`] for items of very different sizes: the items go out most costly
/// first (`cost[i]` is item `i`'s), each thread taking the next as it finishes one. Rayon's
/// halving hands each thread a run of neighbouring items, so one thread could get the big
/// item and its neighbours while the other ran out of work (a scatter whose updates all hit
/// one row: 11 ms for one thread against 3 for the other); handed out greedily by size, the
/// big item runs alone while the others share the rest.
pub fn for_each_mut_by_cost<S: Send>(
    items: &mut [S],
    cost: &[u64],
    f: &(dyn Fn(usize, &mut S) + Sync),
) {
    assert_eq!(items.len(), cost.len(), "a cost per item");
    let threads = threads();
    if items.len() <= 1 || threads <= 1 {
        items.iter_mut().enumerate().for_each(|(i, s)| f(i, s));
        return;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost[i]));
    let cells: Vec<Mutex<&mut S>> = items.iter_mut().map(Mutex::new).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    for_each_task(threads.min(cells.len()), &|_| loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = order.get(k) else { break };
        let mut item = cells[i].lock().unwrap_or_else(|p| p.into_inner());
        f(i, &mut item);
    });
}

/// As [`for_each_mut`] for fallible tasks, with [`try_for_each_task`]'s error rule.
pub fn try_for_each_mut<S: Send>(
    items: &mut [S],
    f: &(dyn Fn(usize, &mut S) -> TaskResult + Sync),
) -> Result<(), OpError> {
    let cells: Vec<Mutex<&mut S>> = items.iter_mut().map(Mutex::new).collect();
    try_for_each_task(cells.len(), &|i| {
        let mut item = cells[i].lock().unwrap_or_else(|p| p.into_inner());
        f(i, &mut item)
    })
}

/// Cuts `out` into chunks of `chunk` elements (the last may be shorter) and runs
/// `f(first_index, chunk)` on each, in parallel when there are several.
pub fn for_each_chunk_mut<T: Send>(
    out: &mut [T],
    chunk: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    let chunk = chunk.max(1);
    let mut chunks: Vec<&mut [T]> = out.chunks_mut(chunk).collect();
    for_each_mut(&mut chunks, &|i, c| f(i * chunk, c));
}

/// `out` in contiguous chunks, a few per thread (see [`for_each_range`]), each given to
/// `f(first_index, chunk)`. Every chunk but the last is a whole multiple of `grain`, so a
/// kernel that passes a row length (or a multiple of it) gets whole rows.
pub fn for_each_split_mut<T: Send>(
    out: &mut [T],
    grain: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    let grain = grain.max(1);
    let k = pieces(out.len(), grain);
    let chunk = out.len().div_ceil(k.max(1)).div_ceil(grain) * grain;
    for_each_chunk_mut(out, chunk, f);
}

/// `dst` = `src` (of one length), by all threads for large slices.
pub fn copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "a copy between equal lengths");
    for_each_split_mut(dst, PAR_MIN_ELEMENTS, &|at, xs| {
        xs.copy_from_slice(&src[at..at + xs.len()]);
    });
}

/// `f` applied to every element of `src`, in parallel chunks for large inputs.
///
/// The output is written straight into the new vector's capacity, not zero-filled first: a
/// zeroed allocation of a large buffer makes jemalloc give its pages back to the kernel and
/// fault them in again, every run (measured: 20K page faults per run for a 64 MB scatter
/// data copy, more than the copy itself).
pub fn map<S: Copy + Sync, D: Copy + Send>(src: &[S], f: impl Fn(S) -> D + Sync) -> Vec<D> {
    let n = src.len();
    let mut out: Vec<D> = Vec::with_capacity(n);
    for_each_split_mut(
        &mut out.spare_capacity_mut()[..n],
        PAR_MIN_ELEMENTS,
        &|start, chunk| {
            for (d, &s) in chunk.iter_mut().zip(&src[start..]) {
                d.write(f(s));
            }
        },
    );
    // SAFETY: `for_each_split_mut` cuts the one slice `0..n` of the capacity into
    // consecutive chunks and runs the closure on every chunk (or panics, and then this line
    // is never reached); the closure writes each element of its chunk, since the chunk
    // `start..start + len` lies in `0..n` and so `src[start..]` has at least `len` values.
    // So the first `n` elements are initialised. `D: Copy` has no drop to worry about.
    unsafe { out.set_len(n) };
    out
}

/// One chunk of a vector [`build`] is writing, filled front to back. Only what was written
/// through it counts as initialised.
pub struct Filler<'a, T> {
    slots: &'a mut [MaybeUninit<T>],
    len: usize,
}

impl<T: Copy> Filler<'_, T> {
    /// Appends `v`. Writing past the chunk is a kernel bug and panics (never unsound).
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        self.slots[self.len].write(v);
        self.len += 1;
    }

    /// Appends a copy of `values`.
    #[inline]
    pub fn extend_from_slice(&mut self, values: &[T]) {
        let end = self.len + values.len();
        // One `memcpy`: the element-wise loop compiled to 16-byte moves, and was a tenth of
        // a stem convolution's time.
        self.slots[self.len..end].write_copy_of_slice(values);
        self.len = end;
    }

    /// Appends a copy of `values` with streaming stores ([`crate::stream`]).
    #[inline]
    pub fn stream_from_slice(&mut self, values: &[T]) {
        let end = self.len + values.len();
        crate::stream::copy_streaming(&mut self.slots[self.len..end], values);
        self.len = end;
    }

    /// Appends `count` copies of `v` and hands them back to be written over: a kernel that
    /// writes its chunk out of order (a tile of several channel planes at a time) writes
    /// straight into the output rather than into a staging buffer copied after.
    #[inline]
    pub fn repeat_mut(&mut self, v: T, count: usize) -> &mut [T] {
        let start = self.len;
        self.repeat(v, count);
        let written = &mut self.slots[start..self.len];
        // SAFETY: `repeat` has just written every slot of `written` (it panics rather than
        // return short), and `MaybeUninit<T>` has `T`'s size, alignment and layout, so the
        // slots are `count` initialised `T`s. The borrow of `self` keeps them from being
        // written through the filler again while the slice lives.
        unsafe { &mut *(written as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Appends a copy of the last `count` values written (a repeated row: nearest
    /// upsampling's second output row of each input row). Panics, never unsound, if fewer
    /// were written.
    #[inline]
    pub fn repeat_last(&mut self, count: usize) {
        let start = self.len - count;
        let end = self.len + count;
        // Copies of initialised slots are initialised: `MaybeUninit<T: Copy>` is `Copy`.
        self.slots.copy_within(start..self.len, self.len);
        self.len = end;
    }

    /// Appends `count` values of `src` taken every `step` from its first: `src[0]`,
    /// `src[step]`, ... (a strided row of an image). Panics, never unsound, if `src` is short.
    #[inline]
    pub fn extend_strided(&mut self, src: &[T], step: usize, count: usize) {
        if count == 0 {
            return;
        }
        let src = &src[..(count - 1) * step + 1];
        let end = self.len + count;
        let slots = &mut self.slots[self.len..end];
        match step {
            1 => {
                slots.write_copy_of_slice(src);
            }
            // The even elements of pairs, which compiles to shuffles where indexing
            // `src[2 * j]` does not.
            2 => {
                let (body, last) = slots.split_at_mut(count - 1);
                for (slot, pair) in body.iter_mut().zip(src.chunks_exact(2)) {
                    slot.write(pair[0]);
                }
                last[0].write(src[2 * (count - 1)]);
            }
            _ => {
                for (slot, v) in slots.iter_mut().zip(src.iter().step_by(step)) {
                    slot.write(*v);
                }
            }
        }
        self.len = end;
    }

    /// Appends `src[i]` for each `i` of `indices`, in order.
    #[inline]
    pub fn extend_gathered(&mut self, src: &[T], indices: &[usize]) {
        let end = self.len + indices.len();
        for (slot, &i) in self.slots[self.len..end].iter_mut().zip(indices) {
            slot.write(src[i]);
        }
        self.len = end;
    }

    /// Slots of the chunk not written yet.
    pub fn remaining(&self) -> usize {
        self.slots.len() - self.len
    }

    /// Appends `count` values that `init` writes into the next `count` slots, proving it by
    /// handing the same slots back initialised (as `write_copy_of_slice` on `[MaybeUninit<T>]`
    /// does): for a kernel that writes them out of order, never zero-filled first.
    ///
    /// Panics when `init` returns any other slice (a kernel bug, never unsound).
    #[inline]
    pub fn init_with(
        &mut self,
        count: usize,
        init: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T],
    ) {
        init_slots(&mut self.slots[self.len..][..count], init);
        self.len += count;
    }

    /// Appends `v` `count` times.
    #[inline]
    pub fn repeat(&mut self, v: T, count: usize) {
        let end = self.len + count;
        self.slots[self.len..end].fill(MaybeUninit::new(v));
        self.len = end;
    }
}

/// Runs `init` on `slots` and checks that it handed back those very slots as `&mut [T]`,
/// which safe code can hold only once they are initialised: the proof a writer of
/// uninitialised memory gives before its slots are counted as written ([`Filler::init_with`],
/// the convolution's stretches).
///
/// Panics when `init` returns any other slice (a kernel bug, never unsound).
pub fn init_slots<T>(
    slots: &mut [MaybeUninit<T>],
    init: impl FnOnce(&mut [MaybeUninit<T>]) -> &mut [T],
) {
    let (at, count) = (slots.as_ptr() as *const T, slots.len());
    let done = init(slots);
    assert!(
        std::ptr::eq(done.as_ptr(), at) && done.len() == count,
        "init_with: the kernel returned other slots"
    );
}

/// A vector of `n` values written in parallel chunks (as [`for_each_split_mut`] cuts them,
/// whole multiples of `grain`) by `f(first_index, filler)`, which must fill its chunk: the
/// values go straight into the new vector's capacity, never zero-filled first (see [`map`]).
/// A chunk left short is an internal error, never uninitialised memory.
pub fn build<T: Copy + Send>(
    n: usize,
    grain: usize,
    f: &(dyn Fn(usize, &mut Filler<'_, T>) + Sync),
) -> Result<Vec<T>, OpError> {
    let mut out: Vec<T> = crate::error::try_with_capacity(n)?;
    let short = AtomicBool::new(false);
    for_each_split_mut(
        &mut out.spare_capacity_mut()[..n],
        grain,
        &|start, chunk| {
            let want = chunk.len();
            let mut filler = Filler {
                slots: chunk,
                len: 0,
            };
            f(start, &mut filler);
            if filler.len != want {
                short.store(true, Ordering::Relaxed);
            }
        },
    );
    if short.load(Ordering::Relaxed) {
        return Err(OpError::new(
            crate::error::codes::INTERNAL,
            "internal error: a kernel left part of its output unwritten",
        ));
    }
    // SAFETY: `for_each_split_mut` cuts the one slice `0..n` of the capacity into
    // consecutive chunks and runs the closure on every chunk (or panics, and then this line
    // is never reached). A `Filler` writes its chunk's slots in order from the first and
    // counts them; no chunk came back short, so every slot of every chunk, and so each of
    // the first `n` elements, was written. `T: Copy` has no drop to worry about.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// The results of `f(i)` for `i` in `0..n`, in order, computed in parallel; the first error by
/// position as in [`try_for_each_task`].
pub fn try_map_tasks<R: Send>(
    n: usize,
    f: &(dyn Fn(usize) -> TaskResult<R> + Sync),
) -> Result<Vec<R>, OpError> {
    let mut slots: Vec<Option<TaskResult<R>>> = (0..n).map(|_| None).collect();
    for_each_mut(&mut slots, &|i, slot| *slot = Some(f(i)));
    first_error(slots.into_iter().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::codes;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Every item is visited once, on any thread count, whatever the costs.
    #[test]
    fn by_cost_visits_every_item_once() {
        for threads in 1..=3 {
            let mut items = vec![0u32; 9];
            let cost = [1, 50, 3, 3, 0, 7, 7, 2, 1];
            pool(threads)
                .install(|| for_each_mut_by_cost(&mut items, &cost, &|i, v| *v += 1 + i as u32));
            let expected: Vec<u32> = (1..=9).collect();
            assert_eq!(items, expected, "{threads} threads");
        }
    }

    /// `build` hands out every element once and returns what the chunks wrote; a chunk left
    /// short is an error, not uninitialised memory. Sizes around the chunking, 1-3 threads.
    #[test]
    fn build_fills_every_element_or_fails() {
        for threads in [1, 2, 3] {
            pool(threads).install(|| {
                for n in [0, 1, PAR_MIN_ELEMENTS - 1, PAR_MIN_ELEMENTS * 3 + 7] {
                    let v = build(n, 16, &|start, f| {
                        let len = f.slots.len();
                        for i in start..start + len / 2 {
                            f.push(i as u32);
                        }
                        let values: Vec<u32> =
                            (start + len / 2..start + len).map(|i| i as u32).collect();
                        f.extend_from_slice(&values);
                    })
                    .unwrap();
                    assert_eq!(v, (0..n as u32).collect::<Vec<_>>());
                    let r = build(n, 16, &|_, f: &mut Filler<'_, u8>| {
                        let len = f.slots.len();
                        f.repeat(7, len.saturating_sub(1));
                    });
                    if n > 0 {
                        assert_eq!(r.unwrap_err().code, codes::INTERNAL);
                    }
                }
            });
        }
    }

    /// `repeat_mut` counts its slots as written and hands them back to be written over, in
    /// any order; going past the chunk panics.
    #[test]
    fn repeat_mut_hands_back_written_slots() {
        for threads in [1, 2] {
            pool(threads).install(|| {
                let n = PAR_MIN_ELEMENTS * 2 + 5;
                let v = build(n, 10, &|start, f| {
                    let len = f.remaining();
                    f.push(start as u32);
                    let rest = f.repeat_mut(1, len - 1);
                    assert!(rest.iter().all(|&x| x == 1));
                    for (i, x) in rest.iter_mut().enumerate().rev() {
                        *x = (start + 1 + i) as u32;
                    }
                    assert_eq!(f.remaining(), 0);
                })
                .unwrap();
                assert_eq!(v, (0..n as u32).collect::<Vec<_>>());
            });
        }
        let past = std::panic::catch_unwind(|| {
            build(4, 4, &|_, f: &mut Filler<'_, u8>| {
                f.repeat_mut(0, 5);
            })
        });
        assert!(past.is_err());
    }

    /// `init_with` counts the slots its kernel hands back initialised, written in any
    /// order; handing back other slots (a shorter run, or a copy elsewhere) panics.
    #[test]
    fn init_with_takes_the_slots_written_out_of_order() {
        for threads in [1, 2] {
            pool(threads).install(|| {
                let n = PAR_MIN_ELEMENTS * 2 + 5;
                let v = build(n, 10, &|start, f| {
                    let len = f.remaining();
                    f.init_with(len, |slots| {
                        for (i, s) in slots.iter_mut().enumerate().rev() {
                            s.write((start + i) as u32);
                        }
                        // SAFETY: each slot was written just above.
                        unsafe { &mut *(slots as *mut [MaybeUninit<u32>] as *mut [u32]) }
                    });
                    assert_eq!(f.remaining(), 0);
                })
                .unwrap();
                assert_eq!(v, (0..n as u32).collect::<Vec<_>>());
            });
        }
        let shorter = std::panic::catch_unwind(|| {
            build(4, 4, &|_, f: &mut Filler<'_, u8>| {
                f.init_with(4, |slots| slots[..3].write_copy_of_slice(&[1, 2, 3]));
            })
        });
        assert!(shorter.is_err());
        let elsewhere = std::panic::catch_unwind(|| {
            build(4, 4, &|_, f: &mut Filler<'_, u8>| {
                f.init_with(4, |_| Box::leak(Box::new([1u8; 4])).as_mut_slice());
            })
        });
        assert!(elsewhere.is_err());
    }

    /// Inside `alone` every loop runs on the calling thread, nested calls included, and
    /// the pool's thread count is back once it returns (or panics).
    #[test]
    fn alone_keeps_every_loop_on_the_calling_thread() {
        pool(2).install(|| {
            assert_eq!(threads(), 2);
            let me = std::thread::current().id();
            let seen = Mutex::new(Vec::new());
            alone(|| {
                assert_eq!(threads(), 1);
                for_each_task(64, &|_| {
                    seen.lock().unwrap().push(std::thread::current().id())
                });
                alone(|| assert_eq!(threads(), 1));
                assert_eq!(threads(), 1);
            });
            assert_eq!(seen.into_inner().unwrap(), vec![me; 64]);
            assert_eq!(threads(), 2);
            let panicked = std::panic::catch_unwind(|| alone(|| panic!("a kernel bug")));
            assert!(panicked.is_err());
            assert_eq!(threads(), 2);
        });
    }

    /// `extend_strided` appends every `step`-th value from the first, for the copy (1), pair
    /// (2) and general forms alike, up to the last value of a source just long enough; a
    /// source too short panics.
    #[test]
    fn extend_strided_takes_every_step_th_value() {
        let src: Vec<u32> = (0..40).collect();
        for step in 1..5 {
            for count in 0..8 {
                let need = if count == 0 {
                    0
                } else {
                    (count - 1) * step + 1
                };
                let v = build(count + 2, 64, &|_, f| {
                    f.push(100);
                    f.extend_strided(&src[3..3 + need], step, count);
                    f.push(200);
                })
                .unwrap();
                let want: Vec<u32> = std::iter::once(100)
                    .chain((0..count).map(|j| (3 + j * step) as u32))
                    .chain(std::iter::once(200))
                    .collect();
                assert_eq!(v, want, "step {step}, count {count}");
            }
        }
        let short = std::panic::catch_unwind(|| {
            build(3, 4, &|_, f: &mut Filler<'_, u32>| {
                f.extend_strided(&[1, 2, 3, 4], 2, 3)
            })
        });
        assert!(short.is_err());
    }

    /// `map` writes every element of its uninitialised output (the proof behind its
    /// `set_len`): sizes around the chunking, at 1, 2 and 3 threads.
    #[test]
    fn map_fills_every_element() {
        for threads in [1, 2, 3] {
            pool(threads).install(|| {
                for n in [
                    0,
                    1,
                    PAR_MIN_ELEMENTS - 1,
                    PAR_MIN_ELEMENTS,
                    3 * PAR_MIN_ELEMENTS + 7,
                ] {
                    let src: Vec<u32> = (0..n as u32).collect();
                    let out = map(&src, |x| u64::from(x) * 3 + 1);
                    assert_eq!(out.len(), n);
                    assert!(out.iter().enumerate().all(|(i, &x)| x == i as u64 * 3 + 1));
                }
            });
        }
    }

    #[test]
    fn every_task_runs_once_at_any_thread_count() {
        for threads in [1, 2, 3] {
            pool(threads).install(|| {
                let mut v = vec![0u32; 1000];
                for_each_split_mut(&mut v, 7, &|start, c| {
                    for (k, x) in c.iter_mut().enumerate() {
                        *x += (start + k) as u32;
                    }
                });
                assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
                let mut items = vec![0usize; 9];
                for_each_mut(&mut items, &|i, x| *x = i * i);
                assert_eq!(items, (0..9).map(|i| i * i).collect::<Vec<_>>());
            });
        }
    }

    /// Kernels pass a row length as the grain and walk whole rows in each chunk: a chunk that
    /// started mid-row put rows in the wrong place (ResNet-18 differed at 2 threads).
    #[test]
    fn split_chunks_are_whole_multiples_of_the_grain() {
        for threads in [2, 3] {
            pool(threads).install(|| {
                for (len, grain) in [(100_000, 147), (1 << 16, 3), (70_000, 70_000), (5, 7)] {
                    let mut v = vec![0u8; len];
                    let starts = std::sync::Mutex::new(Vec::new());
                    for_each_split_mut(&mut v, grain, &|start, chunk| {
                        starts.lock().unwrap().push((start, chunk.len()));
                    });
                    let mut s = starts.into_inner().unwrap();
                    s.sort_unstable();
                    assert!(
                        s.iter().all(|&(start, _)| start % grain == 0),
                        "{len} {grain}: {s:?}"
                    );
                    assert_eq!(s.iter().map(|p| p.1).sum::<usize>(), len);
                }
            });
        }
    }

    #[test]
    fn errors_are_the_smallest_position_whatever_the_order() {
        for threads in [1, 2, 3] {
            pool(threads).install(|| {
                let r = try_for_each_task(50, &|i| {
                    if i % 7 == 3 {
                        Err((100 - i, OpError::new(codes::RUN_SHAPE, i.to_string())))
                    } else {
                        Ok(())
                    }
                });
                // Task 45 reports position 55, the smallest.
                assert_eq!(r.unwrap_err().message, "45");
                let squares = try_map_tasks(5, &|i| Ok(i * i)).unwrap();
                assert_eq!(squares, vec![0, 1, 4, 9, 16]);
            });
        }
    }
}
