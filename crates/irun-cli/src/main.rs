//! The `irun` command line. Thin: parse arguments, call the library, print, pick the exit code.

mod allocator;
mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::normalize_args(std::env::args_os()));
    ExitCode::from(cli::run(args))
}
