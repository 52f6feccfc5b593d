//! Subcommands. Exit codes (the contract of DESIGN.md): 0 success, 1 invalid model or run
//! error, 2 usage error or unreadable file.

mod check;
mod info;

use std::path::PathBuf;

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
    /// The supported (type, opset) pairs.
    Ops,
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
        Command::Ops => {
            for (ty, first, last, version) in irun_ops::registry::supported() {
                let range = if first == last {
                    format!("opset{first}")
                } else {
                    format!("opset{first}..opset{last}")
                };
                println!("{ty:<24} {range:<18} ({ty}-{version})");
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
