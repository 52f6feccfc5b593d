//! `irun bench`: latency of synchronous inferences, printed as OpenVINO's benchmark_app does.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use irun_exec::Executable;
use irun_exec::Profile;
use irun_tensor::ElementType;
use irun_tensor::{Storage, Tensor};

use super::run::{report, ExecArgs, Failure, NpzOut};
use super::EXIT_USAGE;

/// Without -niter or -t, benchmark for this long (benchmark_app's default is 60 s).
const DEFAULT_SECONDS: f64 = 10.0;

/// What `bench` prints after the timings.
pub struct Report {
    /// Per layer type and the slowest layers (`--profile`).
    pub profile: bool,
    /// The timings as one JSON object instead of benchmark_app's block (`--json`).
    pub json: bool,
}

pub fn run(
    exec: &ExecArgs,
    niter: Option<u64>,
    seconds: Option<f64>,
    how: Report,
    outputs: Option<&Path>,
) -> u8 {
    report(try_run(exec, niter, seconds, how, outputs))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn try_run(
    exec: &ExecArgs,
    niter: Option<u64>,
    seconds: Option<f64>,
    how: Report,
    outputs_file: Option<&Path>,
) -> Result<(), Failure> {
    let profiled = how.profile;
    if niter == Some(0) || seconds.is_some_and(|s| s.is_nan() || s <= 0.0) {
        return Err(Failure {
            code: EXIT_USAGE,
            message: "-niter and -t must be positive".into(),
        });
    }
    let outputs_file = outputs_file.map(NpzOut::create).transpose()?;
    let start = Instant::now();
    let exe = exec.compile(false)?;
    let load = start.elapsed();
    let inputs: Vec<(String, Arc<Tensor>)> = if exec.has_inputs() {
        exec.read_inputs(&exe)?
            .into_iter()
            .map(|(k, t)| (k, Arc::new(t)))
            .collect()
    } else {
        random_inputs(&exe)?
    };
    // A stateful model runs as one OpenVINO infer request does: each inference carries the
    // variables over from the last (a KV cache is updated step after step).
    let mut state = exec.initial_state(&exe)?;
    // The timed runs are the profiled ones (the first, warm-up run is not): timing a step
    // costs two clock reads, next to nothing beside a kernel.
    let mut profile = Profile::default();
    let mut warm = false;
    let mut infer = || {
        let inputs = inputs.clone();
        let result = if profiled && warm {
            exe.run_profiled(&mut state, inputs, &mut profile)
        } else {
            exe.run_values_with_state(&mut state, inputs)
        };
        warm = true;
        result.map_err(Failure::of_run)
    };
    let t = Instant::now();
    drop(infer()?);
    let first = t.elapsed();
    let mut latencies = Vec::new();
    let limit = seconds
        .or(if niter.is_none() {
            Some(DEFAULT_SECONDS)
        } else {
            None
        })
        .map(Duration::from_secs_f64);
    let total = Instant::now();
    loop {
        if let Some(n) = niter {
            if latencies.len() as u64 >= n {
                break;
            }
        } else if limit.is_some_and(|l| total.elapsed() >= l) {
            break;
        }
        let t = Instant::now();
        drop(infer()?);
        latencies.push(t.elapsed());
    }
    let duration = total.elapsed();
    // One more inference, neither timed nor profiled: keeping a timed one's outputs would
    // hold its buffers through the next, which then could not reuse them.
    let kept = match outputs_file {
        Some(file) => Some((
            file,
            exe.run_values_with_state(&mut state, inputs)
                .map_err(Failure::of_run)?,
        )),
        None => None,
    };
    latencies.sort();
    let count = latencies.len();
    let median = if count % 2 == 1 {
        latencies[count / 2]
    } else {
        (latencies[count / 2 - 1] + latencies[count / 2]) / 2
    };
    let average = latencies.iter().sum::<Duration>() / count as u32;
    let throughput = count as f64 / duration.as_secs_f64();
    let (min, max) = (latencies[0], latencies[count - 1]);
    if how.json {
        let json = serde_json::json!({
            "load_ms": ms(load),
            "first_inference_ms": ms(first),
            "count": count,
            "duration_ms": ms(duration),
            "median_ms": ms(median),
            "average_ms": ms(average),
            "min_ms": ms(min),
            "max_ms": ms(max),
            "throughput_fps": throughput,
        });
        outln!("{json}");
    } else {
        outln!("[ INFO ] Load model took {:.2} ms", ms(load));
        outln!("[ INFO ] First inference took {:.2} ms", ms(first));
        outln!("[ INFO ] Count:            {count} iterations");
        outln!("[ INFO ] Duration:         {:.2} ms", ms(duration));
        outln!("[ INFO ] Latency:");
        outln!("[ INFO ]    Median:        {:.2} ms", ms(median));
        outln!("[ INFO ]    Average:       {:.2} ms", ms(average));
        outln!("[ INFO ]    Min:           {:.2} ms", ms(min));
        outln!("[ INFO ]    Max:           {:.2} ms", ms(max));
        outln!("[ INFO ] Throughput:       {throughput:.2} FPS");
    }
    if profiled {
        super::profile::print(&exe, &profile);
    }
    match kept {
        Some((file, outputs)) => file.write(&outputs),
        None => Ok(()),
    }
}

/// Seeded random inputs of each input's declared (static) shape: floats in [0, 1), integers in
/// [0, 10), booleans half true. Index inputs need meaningful values: pass --inputs for those.
fn random_inputs(exe: &Executable) -> Result<Vec<(String, Arc<Tensor>)>, Failure> {
    let mut rng = SplitMix(0x1234_5678_9abc_def0);
    exe.inputs()
        .iter()
        .map(|info| {
            let shape = info.shape.to_static().ok_or_else(|| {
                Failure::usage(format!(
                    "input `{}` has a dynamic shape {}; give its values with --inputs",
                    info.layer_name, info.shape
                ))
            })?;
            let n: usize = shape.iter().product();
            let storage = random_storage(info.element_type, n, &mut rng).ok_or_else(|| {
                Failure::usage(format!(
                    "cannot make random {} values for input `{}`; give them with --inputs",
                    info.element_type, info.layer_name
                ))
            })?;
            let t = Tensor::new(info.element_type, shape, storage)
                .map_err(|e| Failure::usage(e.to_string()))?;
            Ok((info.layer_name.clone(), Arc::new(t)))
        })
        .collect()
}

fn random_storage(ty: ElementType, n: usize, rng: &mut SplitMix) -> Option<Storage> {
    use irun_tensor::{bf16, f16};
    let mut unit = || rng.unit();
    Some(match ty {
        ElementType::Boolean => Storage::Bool((0..n).map(|_| unit() < 0.5).collect()),
        ElementType::F16 => Storage::F16((0..n).map(|_| f16::from_f64(unit())).collect()),
        ElementType::Bf16 => Storage::Bf16((0..n).map(|_| bf16::from_f64(unit())).collect()),
        ElementType::F32 => Storage::F32((0..n).map(|_| unit() as f32).collect()),
        ElementType::F64 => Storage::F64((0..n).map(|_| unit()).collect()),
        ElementType::I8 => Storage::I8((0..n).map(|_| (unit() * 10.0) as i8).collect()),
        ElementType::I16 => Storage::I16((0..n).map(|_| (unit() * 10.0) as i16).collect()),
        ElementType::I32 => Storage::I32((0..n).map(|_| (unit() * 10.0) as i32).collect()),
        ElementType::I64 => Storage::I64((0..n).map(|_| (unit() * 10.0) as i64).collect()),
        ElementType::U8 => Storage::U8((0..n).map(|_| (unit() * 10.0) as u8).collect()),
        ElementType::U16 => Storage::U16((0..n).map(|_| (unit() * 10.0) as u16).collect()),
        ElementType::U32 => Storage::U32((0..n).map(|_| (unit() * 10.0) as u32).collect()),
        ElementType::U64 => Storage::U64((0..n).map(|_| (unit() * 10.0) as u64).collect()),
        _ => return None,
    })
}

/// SplitMix64: a small, well-known generator; enough for benchmark inputs.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
