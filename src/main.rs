//! The `irun` command line. Thin: parse arguments, call the library, print, pick the exit code.

mod cli;

/// jemalloc keeps freed pages for reuse (for seconds) instead of returning every large buffer
/// to the kernel as glibc does above 32 MiB; a repeated inference then reuses warm memory
/// instead of paying a page fault per 4 KiB of every output, which on these VMs costs more
/// than the scatter itself.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at startup. By default allocations over 8 MiB ("oversize") go to
/// an arena that returns pages at once; `oversize_threshold:0` keeps them with the others,
/// returned after the usual 10 s of disuse. (`_RJEM_MALLOC_CONF` still overrides this.)
#[export_name = "_rjem_malloc_conf"]
/// The symbol is a C `const char *`: a thin pointer to NUL-terminated bytes, as this is.
static MALLOC_CONF: &[u8; 21] = b"oversize_threshold:0\0";

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::normalize_args(std::env::args_os()));
    ExitCode::from(cli::run(args))
}
