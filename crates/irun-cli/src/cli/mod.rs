//! Subcommands. Exit codes (the contract the README states): 0 success, 1 invalid model or run
//! error, 2 usage error or unreadable file.

/// `println!` for the commands' output, through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::emit(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for the commands' output, through [`emit`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::emit(format_args!($($arg)*))
    };
}

mod bench;
mod check;
mod generate;
mod info;
mod profile;
mod run;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};
use irun_ir::{codes, Diagnostic};

pub const EXIT_OK: u8 = 0;
pub const EXIT_INVALID: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "irun",
    version,
    about = "Run and validate OpenVINO IR models without the OpenVINO runtime"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// IR version, layer count, op histogram, inputs, outputs and weights size.
    Info {
        /// The model's .xml file (its .bin is read from beside it unless --weights is given).
        model: PathBuf,
        /// The weights file, if it is not the .xml path with the extension .bin.
        #[arg(long)]
        weights: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Parse and validate everything; print every diagnostic and a verdict.
    Check {
        /// The model's .xml file.
        model: PathBuf,
        /// The weights file, if it is not the .xml path with the extension .bin.
        #[arg(long)]
        weights: Option<PathBuf>,
        /// Print the diagnostics as one JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Run the model on inputs from .npz/.npy files; write or print its outputs.
    Run {
        #[command(flatten)]
        exec: run::ExecArgs,
        /// Write the outputs to this .npz (one entry per model output, in model order);
        /// without it, a short summary of each output is printed.
        #[arg(long)]
        outputs: Option<PathBuf>,
        /// For a stateful model: write the variables' values after the run to this .npz (one
        /// array per `variable_id`), to pass as --state-in to the next step.
        #[arg(long, value_name = "FILE.npz")]
        state_out: Option<PathBuf>,
    },
    /// Time synchronous inferences; prints a benchmark_app-style block.
    Bench {
        #[command(flatten)]
        exec: run::ExecArgs,
        /// Number of timed iterations (written `-niter` as in benchmark_app).
        #[arg(long = "niter", value_name = "N", conflicts_with = "time")]
        niter: Option<u64>,
        /// Benchmark for this many seconds (default 10 when -niter is not given).
        #[arg(short = 't', long = "time", value_name = "SECONDS")]
        time: Option<f64>,
        /// After the timings, where the time went: per layer type and the slowest layers
        /// (benchmark_app's `-pc`, which is accepted too).
        #[arg(long)]
        profile: bool,
        /// After the timed inferences, run one more and write its outputs to this .npz (as
        /// `run --outputs`): what the model gives after many runs, whatever its ops kept
        /// from one run to the next.
        #[arg(long)]
        outputs: Option<PathBuf>,
        /// Print the timings as one JSON object, unrounded (`load_ms`, `first_inference_ms`,
        /// `count`, `duration_ms`, `median_ms`, `average_ms`, `min_ms`, `max_ms`,
        /// `throughput_fps`) instead of benchmark_app's block of two decimals.
        #[arg(long, conflicts_with = "profile")]
        json: bool,
    },
    /// Greedy generation with a stateful LLM exported by optimum-intel: prefill the prompt,
    /// then one token per step, streamed to stdout as they come.
    Generate(generate::GenerateArgs),
    /// The supported (type, opset) pairs.
    Ops,
}

/// benchmark_app spells its options with one dash (`-niter 100`); clap wants two for long
/// options. This rewrites `-niter` to `--niter` (and `-pc` to `--profile`) before parsing.
pub fn normalize_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.map(|a| match a.to_str() {
        Some("-niter") => "--niter".into(),
        Some(s) if s.starts_with("-niter=") => format!("-{s}").into(),
        Some("-pc") => "--profile".into(),
        _ => a,
    })
    .collect()
}

pub fn run(cli: Cli) -> u8 {
    match cli.command {
        Command::Info {
            model,
            weights,
            json,
        } => info::run(&model, weights.as_deref(), json),
        Command::Check {
            model,
            weights,
            json,
        } => check::run(&model, weights.as_deref(), json),
        Command::Run {
            exec,
            outputs,
            state_out,
        } => run::run(&exec, outputs.as_deref(), state_out.as_deref()),
        Command::Bench {
            exec,
            niter,
            time,
            profile,
            outputs,
            json,
        } => bench::run(
            &exec,
            niter,
            time,
            bench::Report { profile, json },
            outputs.as_deref(),
        ),
        Command::Generate(args) => generate::run(&args),
        Command::Ops => {
            let flows = irun_graph::FlowKind::ALL.iter().map(|&(_, ty, since)| {
                let last = irun_ops::registry::NEWEST_OPSET;
                (ty.to_string(), since, last, since)
            });
            for (ty, first, last, version) in
                irun_ops::registry::supported().into_iter().chain(flows)
            {
                let range = if first == last {
                    format!("opset{first}")
                } else {
                    format!("opset{first}..opset{last}")
                };
                outln!("{ty:<24} {range:<18} ({ty}-{version})");
            }
            EXIT_OK
        }
    }
}

/// Exit code for a fatal loading diagnostic: unreadable files are usage-level (2), anything
/// wrong with the file's content means an invalid model (1).
pub fn exit_code_for(d: &Diagnostic) -> u8 {
    if d.code == codes::UNREADABLE {
        EXIT_USAGE
    } else {
        EXIT_INVALID
    }
}

/// Prints diagnostics to stderr in rustc style.
pub fn print_diagnostics<'a>(file: &str, diags: impl Iterator<Item = &'a Diagnostic>) {
    for d in diags {
        eprint!("{}", d.render(file));
    }
}

/// Writes to stdout. When the reader has gone (`irun ops | head`), the rest of the output is
/// dropped quietly and the command keeps its exit code, where `println!` would panic.
pub(crate) fn emit(args: std::fmt::Arguments) {
    static CLOSED: AtomicBool = AtomicBool::new(false);
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if std::io::stdout().lock().write_fmt(args).is_err() {
        CLOSED.store(true, Ordering::Relaxed);
    }
}
