//! The `irun` command line. Thin: parse arguments, call the library, print, pick the exit code.

mod cli;

/// jemalloc keeps freed pages for reuse (for seconds) instead of returning every large buffer
/// to the kernel as glibc does above 32 MiB; a repeated inference then reuses warm memory
/// instead of paying a page fault per 4 KiB of every output, which on these VMs costs more
/// than the scatter itself.
#[global_allocator]
static ALLOCATOR: ZeroByMemset = ZeroByMemset(tikv_jemallocator::Jemalloc);

/// jemalloc, except that a zeroed allocation is a plain one cleared with `memset`. jemalloc
/// zeroes a recycled page run by handing it back to the kernel (`madvise(MADV_DONTNEED)`) and
/// taking the zero pages it faults in next: DLRM's eight 64 KiB EmbeddingBag sums took 272
/// page faults a run that way, about a third of its time. Clearing memory the process
/// already holds costs a fraction of that.
struct ZeroByMemset(tikv_jemallocator::Jemalloc);

// SAFETY: every method forwards to jemalloc with the caller's own arguments, so each keeps
// jemalloc's guarantees; `alloc_zeroed` adds only a write of `layout.size()` zero bytes to
// the block `alloc` just returned for that layout (at least that size, owned by the caller,
// not yet shared), or nothing when it returned null.
unsafe impl std::alloc::GlobalAlloc for ZeroByMemset {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            unsafe { p.write_bytes(0, layout.size()) };
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

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

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::normalize_args(std::env::args_os()));
    ExitCode::from(cli::run(args))
}

#[cfg(test)]
mod tests {
    /// Zeroed blocks come back zero even where a freed block left other bytes, for sizes on
    /// both sides of jemalloc's small/large boundary; a grown block keeps its contents.
    #[test]
    fn zeroed_allocations_are_zero_after_reuse() {
        for bytes in [24usize, 4096, 70_000, 3 << 20] {
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
}
