use std::path::Path;

use irun_graph::ModelInfo;
use irun_ir::Severity;

use super::{exit_code_for, print_diagnostics, EXIT_INVALID, EXIT_OK};

pub fn run(model: &Path, weights: Option<&Path>, json: bool) -> u8 {
    let file = model.display().to_string();
    let graph = match irun_graph::load(model, weights) {
        Ok(g) => g,
        Err(d) => {
            print_diagnostics(&file, std::iter::once(&d));
            return exit_code_for(&d);
        }
    };
    let info = ModelInfo::of(&graph);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&info).expect("ModelInfo serializes")
        );
    } else {
        out!("{}", info.render(&file));
    }
    // info is a summary, not a validation: only problems that make the summary untrustworthy
    // (errors) are shown, and they make the exit code 1.
    print_diagnostics(
        &file,
        graph
            .all_diagnostics()
            .filter(|d| d.severity == Severity::Error),
    );
    if graph.has_errors() {
        EXIT_INVALID
    } else {
        EXIT_OK
    }
}
