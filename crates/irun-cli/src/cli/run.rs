//! `irun run`: inputs from .npz/.npy, outputs to .npz or a printed summary.

use std::path::{Path, PathBuf};

use irun_exec::{Executable, Options, RunError, RunErrorKind, State};
use irun_tensor::Tensor;

use super::{exit_code_for, print_diagnostics, EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// A failure of a command, with the exit code it maps to. Printed once, by the caller.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn usage(message: String) -> Failure {
        Failure {
            code: EXIT_USAGE,
            message,
        }
    }

    pub fn invalid(message: String) -> Failure {
        Failure {
            code: EXIT_INVALID,
            message,
        }
    }
}

/// Reads and compiles a model; prints diagnostics of an invalid model.
pub fn compile(
    model: &Path,
    weights: Option<&Path>,
    options: &Options,
) -> Result<Executable, Failure> {
    let file = model.display().to_string();
    let graph = irun_graph::load(model, weights).map_err(|d| {
        print_diagnostics(&file, std::iter::once(&d));
        Failure {
            code: exit_code_for(&d),
            message: format!("{file}: cannot read the model"),
        }
    })?;
    if graph.has_errors() {
        let errors: Vec<_> = graph.errors().collect();
        print_diagnostics(&file, errors.iter().copied());
        return Err(Failure::invalid(format!(
            "{file}: invalid model: {} error(s)",
            errors.len()
        )));
    }
    Executable::compile(graph, options).map_err(|e| Failure::invalid(format!("{file}: {e}")))
}

/// Reads `--inputs IN.npz` and every `-i NAME=FILE.npy`, their arrays together within the
/// model's memory limit; a file that cannot be read is a usage error (exit 2). Each array's
/// header is checked against the model input it names before its data is read or inflated
/// (exit 1, as the run would refuse it). Later entries with the same key replace earlier ones.
pub fn read_inputs(
    npz: Option<&Path>,
    singles: &[String],
    exe: &Executable,
) -> Result<Vec<(String, Tensor)>, Failure> {
    let limit = exe.memory_limit();
    let mut inputs: Vec<(String, Tensor)> = Vec::new();
    let mut budget = limit;
    let singles: Vec<(&str, &str)> = singles
        .iter()
        .map(|spec| {
            spec.split_once('=')
                .ok_or_else(|| Failure::usage(format!("-i expects NAME=FILE.npy, got `{spec}`")))
        })
        .collect::<Result<_, _>>()?;
    // The first input that does not fit the model, kept to be reported as the run would.
    let mismatch: std::cell::Cell<Option<RunError>> = std::cell::Cell::new(None);
    let fits = |key: &str, ty, shape: &[usize]| {
        exe.check_input(key, ty, shape).map(|_| ()).map_err(|e| {
            let text = e.message.clone();
            mismatch.set(Some(e));
            text
        })
    };
    if let Some(p) = npz {
        let f = std::fs::File::open(p)
            .map_err(|e| Failure::usage(format!("cannot open inputs file {}: {e}", p.display())))?;
        let mut check = |key: &str, ty, shape: &[usize]| {
            // An entry that an -i file replaces is never used: no reason to refuse it.
            if singles.iter().any(|(name, _)| *name == key) {
                return Ok(());
            }
            fits(key, ty, shape)
        };
        let read =
            irun_tensor::read_npz_checked(std::io::BufReader::new(f), &mut budget, &mut check);
        let entries = read.map_err(|e| match mismatch.take() {
            Some(m) => Failure::of_run(m),
            None => input_failure(&p.display().to_string(), e, limit),
        })?;
        inputs.extend(entries);
    }
    for (name, file) in singles {
        let f = std::fs::File::open(file)
            .map_err(|e| Failure::usage(format!("cannot read {file}: {e}")))?;
        let read = irun_tensor::read_npy_checked(
            &mut std::io::BufReader::new(f),
            &mut budget,
            &mut |ty, shape| fits(name, ty, shape),
        );
        let t = read.map_err(|e| match mismatch.take() {
            Some(m) => Failure::of_run(m),
            None => input_failure(file, e, limit),
        })?;
        inputs.retain(|(k, _)| k != name);
        inputs.push((name.to_string(), t));
    }
    Ok(inputs)
}

/// An inputs file that cannot be read is a usage error (exit 2); one whose arrays do not fit
/// in the memory limit is a resource error, as a tensor of the run would be (exit 1).
fn input_failure(file: &str, e: irun_tensor::TensorError, limit: u64) -> Failure {
    match e {
        irun_tensor::TensorError::OverLimit { what, need, left } => Failure::invalid(format!(
            "inputs file {file}: {what} needs {need} bytes with {} already read, over the memory limit of {limit} bytes",
            limit.saturating_sub(left)
        )),
        e => Failure::usage(format!("cannot read inputs file {file}: {e}")),
    }
}

/// What `run` and `bench` share: the model, its inputs, threads and the memory limit.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// The model's .xml file.
    pub model: PathBuf,
    /// The weights file, if it is not the .xml path with the extension .bin.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// An .npz file with one array per model input (key: a tensor name of the input or the
    /// Parameter layer's name). `bench` without it uses seeded random values.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// One input from an .npy file, as NAME=FILE.npy (repeatable; overrides --inputs).
    #[arg(short = 'i', value_name = "NAME=FILE.npy")]
    pub input: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// The most bytes of tensors alive at once (default: physical memory).
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
    /// For a stateful model (ReadValue/Assign): the variables' values before the run, one
    /// array per `variable_id` in an .npz (as --state-out writes them); variables it does not
    /// name start from their initial values.
    #[arg(long, value_name = "FILE.npz")]
    pub state_in: Option<PathBuf>,
}

impl ExecArgs {
    /// Reads and compiles the model for these options; `runs_once`: skip the compile-time
    /// work on constants, which only pays off over several runs.
    pub fn compile(&self, runs_once: bool) -> Result<Executable, Failure> {
        // Spinning workers measure faster between the parallel loops of one run, and a run
        // on the main thread itself skips two hand-offs; a command owns its process and
        // runs its model on the main thread, so it may spend the cores and the thread so.
        let mut options = Options::new()
            .prepare_constants(!runs_once)
            .keep_workers_awake(true)
            .caller_is_worker(true);
        options.threads = self.threads.map(usize::from);
        options.memory_limit = self.memory_limit;
        compile(&self.model, self.weights.as_deref(), &options)
    }

    /// Whether input files were given.
    pub fn has_inputs(&self) -> bool {
        self.inputs.is_some() || !self.input.is_empty()
    }

    pub fn read_inputs(&self, exe: &Executable) -> Result<Vec<(String, Tensor)>, Failure> {
        read_inputs(self.inputs.as_deref(), &self.input, exe)
    }

    /// A state for `exe`: unset variables, or those of --state-in. A file naming a variable
    /// the model does not have, or holding a value that does not fit one, is a usage error.
    pub fn initial_state(&self, exe: &Executable) -> Result<State, Failure> {
        let mut state = exe.new_state();
        let Some(path) = &self.state_in else {
            return Ok(state);
        };
        let file = path.display().to_string();
        let f = std::fs::File::open(path)
            .map_err(|e| Failure::usage(format!("cannot open state file {file}: {e}")))?;
        let mut budget = exe.memory_limit();
        let entries = irun_tensor::read_npz_within(std::io::BufReader::new(f), &mut budget)
            .map_err(|e| input_failure(&file, e, exe.memory_limit()))?;
        for (id, value) in entries {
            state
                .set(&id, value)
                .map_err(|e| Failure::usage(format!("state file {file}: {}", e.message)))?;
        }
        Ok(state)
    }
}

/// Prints a failure and maps it to its exit code.
pub fn report(result: Result<(), Failure>) -> u8 {
    match result {
        Ok(()) => EXIT_OK,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

impl Failure {
    /// A failed run: exit 1, the message with its code (`[E0601] layer 4 ...`).
    pub fn of_run(e: RunError) -> Failure {
        Failure {
            // Every run failure is exit 1 (the exit-code contract in the README); the match
            // makes a new kind choose its code.
            code: match e.kind {
                RunErrorKind::Input
                | RunErrorKind::Op
                | RunErrorKind::InvalidModel
                | RunErrorKind::Resources => EXIT_INVALID,
            },
            message: e.to_string(),
        }
    }
}

pub fn run(exec: &ExecArgs, outputs: Option<&Path>, state_out: Option<&Path>) -> u8 {
    report(try_run(exec, outputs, state_out))
}

/// Writes named tensors to an .npz file.
fn write_npz(path: &Path, entries: &[(String, Tensor)]) -> Result<(), Failure> {
    NpzOut::create(path)?.write(entries)
}

/// An .npz about to be written: a new file beside `path` until [`NpzOut::write`] has
/// written it whole and renamed it to `path`. Created before a long run, it fails at once
/// on a path that cannot be written; a run that fails, or a write cut short, leaves
/// whatever was at `path` as it was and no partial file behind.
pub struct NpzOut {
    path: PathBuf,
    partial: PathBuf,
    file: Option<std::fs::File>,
}

impl NpzOut {
    pub fn create(path: &Path) -> Result<NpzOut, Failure> {
        let name = match path.file_name() {
            Some(name) if !path.is_dir() => name,
            _ => {
                let e = "a directory, not a file";
                return Err(Failure::usage(format!(
                    "cannot create {}: {e}",
                    path.display()
                )));
            }
        };
        let mut partial_name = std::ffi::OsString::from(".");
        partial_name.push(name);
        partial_name.push(format!(".{}.partial", std::process::id()));
        let partial = path.with_file_name(partial_name);
        let file = std::fs::File::create(&partial)
            .map_err(|e| Failure::usage(format!("cannot create {}: {e}", path.display())))?;
        Ok(NpzOut {
            path: path.to_path_buf(),
            partial,
            file: Some(file),
        })
    }

    pub fn write(mut self, entries: &[(String, Tensor)]) -> Result<(), Failure> {
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::usage(format!("cannot write {}: {e}", self.path.display()))
        };
        let file = self.file.take().expect("an NpzOut is written once");
        let mut w = std::io::BufWriter::new(file);
        irun_tensor::write_npz(entries, &mut w).map_err(|e| cannot(&e))?;
        let file = w.into_inner().map_err(|e| cannot(e.error()))?;
        file.sync_all().map_err(|e| cannot(&e))?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| cannot(&e))
    }
}

impl Drop for NpzOut {
    fn drop(&mut self) {
        // Not renamed: the run failed or the write did; the partial file goes.
        if self.partial.exists() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

fn try_run(
    exec: &ExecArgs,
    outputs_file: Option<&Path>,
    state_out: Option<&Path>,
) -> Result<(), Failure> {
    let exe = exec.compile(true)?;
    let inputs = exec.read_inputs(&exe)?;
    let mut state = exec.initial_state(&exe)?;
    let outputs = exe
        .run_with_state(&mut state, inputs)
        .map_err(Failure::of_run)?;
    if let Some(path) = state_out {
        let values: Vec<(String, Tensor)> = state
            .values()
            .map(|(id, t)| (id.to_string(), t.clone()))
            .collect();
        write_npz(path, &values)?;
    }
    match outputs_file {
        Some(path) => write_npz(path, &outputs)?,
        None => {
            for (key, t) in &outputs {
                outln!(
                    "{key}: {} {} = [{}]",
                    t.element_type(),
                    irun_tensor::fmt_shape(t.shape()),
                    t.preview(16)
                );
            }
        }
    }
    Ok(())
}
