//! The process's allocator: jemalloc, with its options set for repeated inferences and two
//! changes to how blocks are handed out ([`Tuned`]).

use std::alloc::{GlobalAlloc, Layout};

/// jemalloc keeps freed pages for reuse (for seconds) instead of returning every large buffer
/// to the kernel as glibc does above 32 MiB; a repeated inference then reuses warm memory
/// instead of paying a page fault per 4 KiB of every output, which on these VMs costs more
/// than the scatter itself.
#[global_allocator]
static ALLOCATOR: Tuned = Tuned(tikv_jemallocator::Jemalloc);

/// jemalloc's options, read at startup. By default allocations over 8 MiB ("oversize") go to
/// an arena that returns pages at once; `oversize_threshold:0` keeps them with the others.
/// Those are returned gradually over the decay time, which still lost pages between the
/// runs of `irun bench` (a GCN on 500,000 edges took 520K page faults in 22 runs, about 20 ms
/// a run): with the decays off, freed pages stay with the process for its next run, as an
/// inference runtime's memory pool does (measured: 165-270K faults, the first run's), and
/// the peak stays the peak. (`_RJEM_MALLOC_CONF` still overrides this.)
#[export_name = "_rjem_malloc_conf"]
/// The symbol is a C `const char *`: a thin pointer to NUL-terminated bytes, as this is.
static MALLOC_CONF: &[u8; 57] = b"oversize_threshold:0,dirty_decay_ms:-1,muzzy_decay_ms:-1\0";

/// jemalloc, except that:
/// - a zeroed allocation is a plain one cleared with `memset`. jemalloc zeroes a recycled
///   page run by handing it back to the kernel (`madvise(MADV_DONTNEED)`) and taking the
///   zero pages it faults in next: DLRM's eight 64 KiB EmbeddingBag sums took 272 page
///   faults a run that way, about a third of its time. Clearing memory the process already
///   holds costs a fraction of that.
/// - a large block asks for 2 MiB pages before it is first written ([`advise_huge_pages`]),
///   and so a large block that grows is moved by a new allocation and a copy, not by
///   jemalloc's own move, which would write the new pages before they could be asked for.
struct Tuned(tikv_jemallocator::Jemalloc);

// SAFETY: `alloc` and `dealloc` forward to jemalloc with the caller's own arguments, so each
// keeps jemalloc's guarantees; `alloc` adds only a hint on the block it returns
// (`advise_huge_pages` never changes contents or mappings). `alloc_zeroed` adds a write of
// `layout.size()` zero bytes to the block `alloc` just returned for that layout (at least that
// size, owned by the caller, not yet shared), or nothing when it returned null. `realloc`
// forwards, or for a block growing to a large size does what `GlobalAlloc::realloc`'s default
// does: a block for the new layout (the caller guarantees a nonzero `new_size` that does not
// overflow `isize` when rounded up to `layout.align()`, so the layout is valid), the smaller
// of the two sizes copied (both blocks are at least that long and distinct), then the old
// block freed with the layout it was allocated with; on failure the old block is kept, as
// the contract asks.
unsafe impl GlobalAlloc for Tuned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc(layout) };
        advise_huge_pages(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.alloc(layout) };
        if !p.is_null() {
            unsafe { p.write_bytes(0, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Only a block that grows into the large sizes gets new pages to ask for: a shrinking
        // one keeps (part of) the pages it had, which jemalloc can do in place.
        if new_size < HUGE_PAGES_MIN_BYTES || new_size <= layout.size() {
            return unsafe { self.0.realloc(ptr, layout, new_size) };
        }
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let p = unsafe { self.alloc(new_layout) };
        if !p.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.0.dealloc(ptr, layout);
            }
        }
        p
    }
}

/// Blocks from this size on ask for 2 MiB pages: smaller ones hold at most one whole 2 MiB
/// page, which a 2 MiB-aligned stretch of the block needs.
const HUGE_PAGES_MIN_BYTES: usize = 4 << 20;

/// Asks Linux to back the whole 4 KiB pages of the `bytes` bytes at `p` with 2 MiB pages
/// ("transparent huge pages", which most systems give to the processes that ask:
/// `enabled = madvise`). Kernels that reach a large buffer at scattered places (a scatter's
/// output) or stream through several at once otherwise miss the TLB often: a 32 MiB output
/// is 8192 pages against a few thousand TLB entries. Measured on a 2-core Zen 4, 2 threads
/// (medians of the runs' minima, 4 alternating runs): 8M i32 maxima on uniform indices
/// 15.4 to 14.2 ms, reverse-sorted 4.7 to 4.4; the 16M f32 sums 15.9 to 15.5, the mean
/// 21.0 to 18.7, the ScatterNDUpdate sum 14.4 to 14.0. Every block asking (jemalloc's
/// `thp:always`) took the uniform maxima to 13.0 ms, their ~70 bucket lists of 1 MB being
/// in 2 MiB pages too, but cost a small model 13 MB more memory (BERT 14 to 27 MB), the
/// slabs of small blocks taking whole 2 MiB pages. A hint: it never changes contents, and
/// where it is not supported nothing happens.
fn advise_huge_pages(p: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if !p.is_null() && bytes >= HUGE_PAGES_MIN_BYTES {
        const PAGE: usize = 4096;
        let start = (p as usize).next_multiple_of(PAGE);
        let end = (p as usize + bytes) / PAGE * PAGE;
        // SAFETY: `madvise(MADV_HUGEPAGE)` only changes how the kernel backs the pages of the
        // range, never their contents or mapping; the range is page-aligned (every Linux page
        // size is a multiple of 4 KiB, and a misaligned start only fails the call) and lies
        // inside the block, which the allocator just handed out. A failure (EINVAL where
        // huge pages are not built in) is harmless, so the result is not needed.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, bytes);
}

#[cfg(test)]
mod tests {
    use super::HUGE_PAGES_MIN_BYTES;

    /// Zeroed blocks come back zero even where a freed block left other bytes, for sizes on
    /// both sides of jemalloc's small/large boundary and of the huge-page size; a grown block
    /// keeps its contents.
    #[test]
    fn zeroed_allocations_are_zero_after_reuse() {
        for bytes in [
            24usize,
            4096,
            70_000,
            3 << 20,
            HUGE_PAGES_MIN_BYTES + 12_345,
        ] {
            for _ in 0..4 {
                let dirty = vec![0xABu8; bytes];
                drop(std::hint::black_box(dirty));
                let zeroed = vec![0u8; bytes];
                assert!(zeroed.iter().all(|&b| b == 0), "{bytes} bytes");
                let wide = vec![0u64; bytes / 8 + 1];
                assert!(wide.iter().all(|&b| b == 0), "{bytes} bytes as u64");
            }
        }
        let mut grown: Vec<u32> = (0..1000).collect();
        grown.reserve(1 << 20);
        assert!(grown.iter().enumerate().all(|(i, &v)| v == i as u32));
    }

    /// Blocks that grow into and within the huge-page sizes (moved by `Tuned::realloc`'s own
    /// copy) and shrink within and out of them (by jemalloc) keep their contents, with any
    /// alignment.
    #[test]
    fn grown_and_shrunk_blocks_keep_their_contents() {
        let pattern = |i: usize| (i % 251) as u8;
        let steps = [
            1usize << 20,
            HUGE_PAGES_MIN_BYTES + 1,
            3 * HUGE_PAGES_MIN_BYTES,
            2 * HUGE_PAGES_MIN_BYTES,
            4096,
        ];
        let mut v: Vec<u8> = (0..steps[0]).map(pattern).collect();
        for &len in &steps[1..] {
            if len > v.len() {
                v.reserve_exact(len - v.len());
                let from = v.len();
                v.extend((from..len).map(pattern));
            } else {
                v.truncate(len);
                v.shrink_to_fit();
            }
            assert_eq!(v.len(), len);
            assert!(v.iter().enumerate().all(|(i, &b)| b == pattern(i)), "{len}");
        }
        // A wider alignment than jemalloc's default for the size, moved while large.
        let mut wide: Vec<u128> = (0..(HUGE_PAGES_MIN_BYTES / 16) as u128).collect();
        wide.reserve_exact(wide.len());
        assert!(wide.iter().enumerate().all(|(i, &x)| x == i as u128));
        assert_eq!(wide.as_ptr() as usize % std::mem::align_of::<u128>(), 0);
    }
}
