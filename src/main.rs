//! The `irun` command line. Thin: parse arguments, call the library, print, pick the exit code.

mod cli;

/// jemalloc keeps freed pages for reuse (for seconds) instead of returning every large buffer
/// to the kernel as glibc does above 32 MiB; a repeated inference then reuses warm memory
/// instead of paying a page fault per 4 KiB of every output, which on these VMs costs more
/// than the scatter itself.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
