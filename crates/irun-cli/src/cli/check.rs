use std::path::Path;

use irun_ir::{Diagnostic, Severity};

use super::{exit_code_for, print_diagnostics, EXIT_INVALID, EXIT_OK};

/// `irun check`: every diagnostic of reading, structure, op resolution and inference, then a
/// one-line verdict. Exit 0 valid (warnings allowed), 1 invalid, 2 unreadable.
pub fn run(model: &Path, weights: Option<&Path>, json: bool) -> u8 {
    let file = model.display().to_string();
    let (diags, layers): (Vec<Diagnostic>, usize) = match irun_graph::load(model, weights) {
        Ok(g) => {
            let result = (g.all_diagnostics().cloned().collect(), g.model.layers.len());
            // The process ends right after printing: freeing a large model's many small
            // allocations one by one would only add time (about a tenth of `check`).
            std::mem::forget(g);
            result
        }
        Err(d) => {
            let code = exit_code_for(&d);
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&[&d]).expect("diagnostics serialize")
                );
            } else {
                print_diagnostics(&file, std::iter::once(&d));
                eprintln!("{file}: unreadable or not IR: 1 error");
            }
            return code;
        }
    };
    let count = |s: Severity| diags.iter().filter(|d| d.severity == s).count();
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&diags).expect("diagnostics serialize")
        );
    } else {
        print_diagnostics(&file, diags.iter());
        let verdict = if errors > 0 { "invalid" } else { "valid" };
        eprintln!("{file}: {verdict}: {layers} layers, {errors} error(s), {warnings} warning(s)");
    }
    if errors > 0 {
        EXIT_INVALID
    } else {
        EXIT_OK
    }
}
