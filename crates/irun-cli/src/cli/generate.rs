//! `irun generate`: greedy text generation with a stateful decoder exported by optimum-intel
//! (the loop is `irun_exec::generate`). Text in and out goes through the `tokenizer.json`
//! beside the model; token ids work without one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use irun_exec::generate::{end_tokens, Generator};
use irun_exec::Options;
use tokenizers::Tokenizer;

use super::run::{compile, Failure};
use super::EXIT_OK;

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// The model's .xml file, or the directory optimum-intel exported it to (which holds
    /// openvino_model.xml).
    pub model: PathBuf,
    /// The prompt as token ids, comma-separated.
    #[arg(
        long,
        value_name = "ID,ID,...",
        value_delimiter = ',',
        required_unless_present = "prompt",
        conflicts_with = "prompt"
    )]
    pub prompt_ids: Vec<i64>,
    /// The prompt as text, tokenized by the tokenizer.json beside the model.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Stop after this many new tokens (or at the end-of-sequence token the export's
    /// generation_config.json or config.json names, whichever comes first).
    #[arg(long, default_value_t = 32)]
    pub max_new_tokens: usize,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print one JSON object when done: the generated ids, the text when there is a
    /// tokenizer, and the timings (prefill_ms after an untimed warm-up run of the prompt,
    /// decode_ms_per_token as the median step, load_ms).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &GenerateArgs) -> u8 {
    match generate(args) {
        Ok(()) => EXIT_OK,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

/// The .xml file and the directory holding the export's other files.
fn model_files(model: &Path) -> (PathBuf, PathBuf) {
    if model.is_dir() {
        (model.join("openvino_model.xml"), model.to_path_buf())
    } else {
        let dir = model
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        (model.to_path_buf(), dir)
    }
}

fn generate(args: &GenerateArgs) -> Result<(), Failure> {
    let (xml, dir) = model_files(&args.model);
    let tokenizer_path = dir.join("tokenizer.json");
    let tokenizer = if tokenizer_path.is_file() {
        let t = Tokenizer::from_file(&tokenizer_path).map_err(|e| {
            Failure::invalid(format!(
                "{}: cannot read the tokenizer: {e}",
                tokenizer_path.display()
            ))
        })?;
        Some(t)
    } else {
        None
    };
    let prompt: Vec<i64> = match (&args.prompt, &tokenizer) {
        (Some(text), Some(t)) => t
            .encode(text.as_str(), true)
            .map_err(|e| Failure::invalid(format!("cannot tokenize the prompt: {e}")))?
            .get_ids()
            .iter()
            .map(|&id| i64::from(id))
            .collect(),
        (Some(_), None) => {
            return Err(Failure::usage(format!(
                "--prompt needs the tokenizer.json optimum writes beside the model, and {} has none; pass the token ids with --prompt-ids",
                dir.display()
            )))
        }
        (None, _) => args.prompt_ids.clone(),
    };
    if prompt.is_empty() {
        return Err(Failure::usage("the prompt has no tokens".into()));
    }
    let end = end_tokens(&dir).map_err(Failure::invalid)?;

    let started = Instant::now();
    let mut options = Options::new()
        .keep_workers_awake(true)
        .caller_is_worker(true);
    options.threads = args.threads.map(usize::from);
    let exe = compile(&xml, None, &options)?;
    let load = started.elapsed();
    let mut generator =
        Generator::new(&exe).map_err(|e| Failure::invalid(format!("{}: {e}", xml.display())))?;
    let run_error = |e: irun_exec::RunError| Failure::invalid(format!("{}: {e}", xml.display()));

    if args.json {
        // One untimed run of the prompt, so that the timed one does not pay for first
        // touches of the weights and the allocator's warm-up.
        generator.feed(&prompt).map_err(run_error)?;
        let done = generator
            .generate(&prompt, args.max_new_tokens, &end, |_| true)
            .map_err(run_error)?;
        let mut steps: Vec<f64> = done.steps.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        steps.sort_by(f64::total_cmp);
        let median = steps.get(steps.len() / 2).copied();
        let mut json = serde_json::json!({
            "tokens": done.tokens,
            "prefill_ms": done.prefill.as_secs_f64() * 1e3,
            "decode_ms_per_token": median,
            "load_ms": load.as_secs_f64() * 1e3,
        });
        if let Some(t) = &tokenizer {
            json["text"] = serde_json::Value::String(decode(t, &done.tokens)?);
        }
        outln!("{json}");
        return Ok(());
    }

    // Stream: each token as it comes, as text (the decoded suffix that the new token adds)
    // or as ids.
    let mut printed = String::new();
    let mut tokens: Vec<i64> = Vec::new();
    let mut failure = None;
    generator
        .generate(&prompt, args.max_new_tokens, &end, |token| {
            tokens.push(token);
            match &tokenizer {
                Some(t) => match decode(t, &tokens) {
                    Ok(text) => {
                        if let Some(new) = text.strip_prefix(printed.as_str()) {
                            out!("{new}");
                        } else {
                            out!("{text}");
                        }
                        printed = text;
                    }
                    Err(f) => {
                        failure = Some(f);
                        return false;
                    }
                },
                None => out!("{}{token}", if tokens.len() > 1 { " " } else { "" }),
            }
            let _ = std::io::Write::flush(&mut std::io::stdout());
            true
        })
        .map_err(run_error)?;
    outln!("");
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn decode(t: &Tokenizer, ids: &[i64]) -> Result<String, Failure> {
    let ids: Vec<u32> = ids
        .iter()
        .map(|&id| {
            u32::try_from(id)
                .map_err(|_| Failure::invalid(format!("token id {id} is not a tokenizer id")))
        })
        .collect::<Result<_, _>>()?;
    t.decode(&ids, true)
        .map_err(|e| Failure::invalid(format!("cannot decode the tokens: {e}")))
}
