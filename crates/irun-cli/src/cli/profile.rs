//! `irun bench --profile` (benchmark_app's `-pc`): where the time of the timed inferences
//! went, by layer type and by layer.

use std::collections::HashMap;
use std::time::Duration;

use irun_exec::Executable;
use irun_exec::Profile;

/// How many of the slowest layers to list.
const SLOWEST: usize = 15;

fn ms_per_run(d: Duration, runs: u32) -> f64 {
    d.as_secs_f64() * 1e3 / f64::from(runs.max(1))
}

pub fn print(exe: &Executable, profile: &Profile) {
    let graph = exe.graph();
    let total = profile.total().as_secs_f64().max(f64::MIN_POSITIVE);
    let runs = profile.runs;
    let mut by_type: HashMap<String, (Duration, usize)> = HashMap::new();
    let mut layers: Vec<(usize, Duration)> = Vec::new();
    for (n, &d) in profile.steps.iter().enumerate() {
        let layer = graph.layer(n);
        if matches!(layer.type_name.as_str(), "Const" | "Parameter" | "Result") {
            continue;
        }
        let key = format!(
            "{}-{}",
            layer.type_name,
            layer.version.trim_start_matches("opset")
        );
        let e = by_type.entry(key).or_default();
        e.0 += d;
        e.1 += 1;
        layers.push((n, d));
    }
    let mut types: Vec<_> = by_type.into_iter().collect();
    types.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    outln!("[ INFO ] Time by layer type, per inference (mean of {runs} profiled):");
    for (ty, (d, count)) in &types {
        outln!(
            "[ INFO ]    {ty:<32} {count:>5} layer(s) {:>10.3} ms {:>5.1}%",
            ms_per_run(*d, runs),
            100.0 * d.as_secs_f64() / total
        );
    }
    if !profile.inference.is_zero() {
        outln!(
            "[ INFO ]    {:<32} {:>16} {:>10.3} ms {:>5.1}%",
            "(shape inference for the inputs)",
            "",
            ms_per_run(profile.inference, runs),
            100.0 * profile.inference.as_secs_f64() / total
        );
    }
    layers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    outln!("[ INFO ] Slowest layers, per inference:");
    for &(n, d) in layers.iter().take(SLOWEST) {
        let layer = graph.layer(n);
        outln!(
            "[ INFO ]    {:>10.3} ms {:>5.1}%  {} ({}, line {})",
            ms_per_run(d, runs),
            100.0 * d.as_secs_f64() / total,
            layer.name,
            layer.type_name,
            layer.pos.line
        );
    }
}
