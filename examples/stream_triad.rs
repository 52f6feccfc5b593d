//! The STREAM triad (`a[j] = b[j] + s * c[j]` on f64 arrays far larger than the caches),
//! the memory bandwidth that `tools/bench_openvino.py` measures irun's kernels against.
//! Counted as STREAM counts it: 24 bytes per element (two reads, one write; the write's
//! line fill is not counted), best of the repetitions after the first.
//!
//! ```sh
//! cargo run --release --example stream_triad -- --threads 2
//! ```
//!
//! Each thread owns one contiguous part of the three arrays, writes it first (so its pages
//! are its own) and runs the triad on it between two barriers; the main thread times each
//! repetition from the first barrier to the second.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Elements per array: 3 x 128 MiB, four times a 32 MiB last-level cache per array.
const ELEMENTS: usize = 16 << 20;
const REPETITIONS: usize = 11;
const BYTES_PER_ELEMENT: usize = 24;

fn main() {
    let threads = match parse_threads(std::env::args().skip(1)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("stream_triad: {e}\nusage: stream_triad [--threads N]");
            std::process::exit(2);
        }
    };
    let times = triad_times(threads, ELEMENTS, REPETITIONS);
    // The first repetition faults nothing in (the arrays were written) but warms the TLBs.
    let mut rest: Vec<Duration> = times[1..].to_vec();
    rest.sort();
    let rate = |d: Duration| (ELEMENTS * BYTES_PER_ELEMENT) as f64 / d.as_secs_f64() / 1e9;
    println!(
        "STREAM triad, {threads} thread(s), 3 x {} MiB f64: best {:.2} GB/s, median {:.2} GB/s",
        (ELEMENTS * 8) >> 20,
        rate(rest[0]),
        rate(rest[rest.len() / 2]),
    );
}

fn parse_threads(mut args: impl Iterator<Item = String>) -> Result<usize, String> {
    let mut threads = 2;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--threads" => {
                let v = args.next().ok_or("--threads needs a value")?;
                threads = v
                    .parse()
                    .ok()
                    .filter(|&t| t > 0)
                    .ok_or_else(|| format!("--threads {v}: not a positive count"))?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(threads)
}

/// Wall time of each repetition of the triad over `n` elements shared among `threads`.
fn triad_times(threads: usize, n: usize, repetitions: usize) -> Vec<Duration> {
    let start = Barrier::new(threads + 1);
    let end = Barrier::new(threads + 1);
    let part = n.div_ceil(threads);
    std::thread::scope(|scope| {
        for k in 0..threads {
            let len = part.min(n.saturating_sub(k * part));
            let (start, end) = (&start, &end);
            scope.spawn(move || {
                let mut a = vec![0.0f64; len];
                let b = vec![1.0f64; len];
                let c = vec![2.0f64; len];
                for _ in 0..repetitions {
                    start.wait();
                    triad(&mut a, &b, &c, std::hint::black_box(3.0));
                    std::hint::black_box(&mut a);
                    end.wait();
                }
                // Every element of every repetition is 1 + 3 * 2.
                assert!(a.iter().all(|&x| x == 7.0), "triad computed wrong");
            });
        }
        (0..repetitions)
            .map(|_| {
                start.wait();
                let t = Instant::now();
                end.wait();
                t.elapsed()
            })
            .collect()
    })
}

#[inline(never)]
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, &b), &c) in a.iter_mut().zip(b).zip(c) {
        *a = b + s * c;
    }
}
