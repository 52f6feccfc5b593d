#!/usr/bin/env python3
"""Times OpenVINO CPU and `irun bench` on the same IR files in the same run, and prints the
README's table: medians, the ratio OpenVINO/irun, and the fraction of the machine's STREAM
triad bandwidth irun reaches (the minimal bytes a kernel moves, per second of irun's median,
over the triad's best rate, measured by `examples/stream_triad.rs` at the start of the run).

OpenVINO: CPU plugin, INFERENCE_NUM_THREADS=2, PERFORMANCE_HINT=LATENCY,
INFERENCE_PRECISION_HINT=f32; one synchronous infer() per iteration with the input tensor
already set (from the inputs.npz next to the model when the generator wrote one, as for
c_input; else random). irun: `irun bench MODEL -niter N --threads 2 [--inputs inputs.npz]`.
The two alternate for `--rounds` rounds and each reports the median of its per-round medians
(the machine is noisy).

With `--old BINARY` an earlier build of irun runs in the same rounds, alternating with the
other two, and the table gains its median and the ratio new/old: the A/B a kernel change is
judged by. Each row also shows the workload's memory-traffic floor (its minimal bytes over
the triad's rate) and the share of that floor irun reaches.

    venv/bin/python tools/bench_openvino.py tools/out/bench --irun target/release/irun
    venv/bin/python tools/bench_openvino.py tools/out/bench --irun new/irun --old old/irun
"""

import argparse
import re
import statistics
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import openvino as ov

import bf16

DESCRIPTIONS = {
    "a": "ScatterUpdate-3 [1000,256,10,15], idx [125,20], axis 1",
    "b": "SEU-12 none [1000,256,7,7], idx [125,20,7,6]",
    "c": "SEU-12 sum [1M], 16M i64 idx (histogram)",
    "d": "SEU-12 mean no-init [4096,512], idx [65536,512]",
    "e": "SND-15 none [214272,64], 12000 rows",
    "f": "ScatterUpdate-3 KV cache [1,32,4096,128], 16 pos",
    "g": "SEU-12 max i32 [8M], 8M i32 idx",
    "c_input": "c with indices/updates as inputs (nothing prepared)",
}
# Issue 12's reductions with indices and updates as inputs, per index distribution
# (tools/gen_bench_models.py: reduction_workloads).
for _d in ["uniform", "skewed", "equal", "sorted", "reversed", "hot"]:
    DESCRIPTIONS[f"sum_{_d}"] = f"SEU-12 sum f32 [1M] <- 16M i64 idx, {_d}"
    DESCRIPTIONS[f"max_{_d}"] = f"SEU-12 max i32 [8M] <- 8M i32 idx, {_d}"
    DESCRIPTIONS[f"mean_{_d}"] = f"SEU-12 mean no-init [4096,512] <- [65536,512], {_d} rows"
    DESCRIPTIONS[f"ndsum_{_d}"] = f"SND-15 sum f32 [1M,16] <- 1M rows, {_d}"
# The same sums and maxima with other element types (gen_bench_models.py: typed_workloads).
for _d in ["uniform", "skewed", "equal", "sorted", "reversed", "hot"]:
    for _t in ["f16", "bf16"]:
        DESCRIPTIONS[f"sum_{_d}_{_t}"] = f"SEU-12 sum {_t} [1M] <- 16M i64 idx, {_d}"
for _d in ["uniform", "skewed"]:
    for _t in ["f64", "i64"]:
        DESCRIPTIONS[f"sum_{_d}_{_t}"] = f"SEU-12 sum {_t} [1M] <- 16M i64 idx, {_d}"
    DESCRIPTIONS[f"max_{_d}_f32"] = f"SEU-12 max f32 [8M] <- 8M i32 idx, {_d}"
    DESCRIPTIONS[f"ndsum_{_d}_f16"] = f"SND-15 sum f16 [1M,16] <- 1M rows, {_d}"
    for _t in ["bf16", "i32", "i64", "f64"]:
        DESCRIPTIONS[f"ndsum_{_d}_{_t}"] = f"SND-15 sum {_t} [1M,16] <- 1M rows, {_d}"
    DESCRIPTIONS[f"sum_{_d}_i32_250k"] = f"SEU-12 sum i32 [250K] <- 16M i64 idx, {_d}"


def minimal_bytes(model_path):
    """Bytes a kernel must at least move: read data, indices and updates, write the output.
    ScatterUpdate needs only the last update of each output slice, at most the output's size."""
    m = ov.Core().read_model(model_path)
    total = 0
    for op in m.get_ordered_ops():
        if op.get_type_name().startswith("Scatter"):
            size = [int(np.prod(list(op.input(i).get_shape()))) * op.input(i).get_element_type().size
                    for i in range(3)]
            out = int(np.prod(list(op.output(0).get_shape()))) * op.output(0).get_element_type().size
            if op.get_type_name() == "ScatterUpdate":
                size[2] = min(size[2], out)
            total += sum(size) + out
    return total


def triad_bandwidth(binary, threads=2):
    """STREAM triad bandwidth (bytes per second, STREAM's count: 24 bytes per element), the best
    of its repetitions, from `examples/stream_triad.rs`, built here if `binary` is missing."""
    root = Path(__file__).resolve().parent.parent
    if not Path(binary).exists():
        subprocess.run(["cargo", "build", "--release", "--example", "stream_triad"], cwd=root, check=True)
        binary = root / "target" / "release" / "examples" / "stream_triad"
    out = subprocess.run([str(binary), "--threads", str(threads)], capture_output=True, text=True,
                         check=True).stdout
    print(out.strip())
    return float(re.search(r"best ([0-9.]+) GB/s", out).group(1)) * 1e9


def memory_bandwidth(threads=2, mb=512, reps=5):
    """Copy bandwidth (bytes read + written per second) with `threads` threads of numpy copies."""
    n = mb * (1 << 20) // 4
    src = [np.ones(n, np.float32) for _ in range(threads)]
    dst = [np.empty(n, np.float32) for _ in range(threads)]
    best = 0.0
    for _ in range(reps):
        ts = [threading.Thread(target=np.copyto, args=(dst[i], src[i])) for i in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.perf_counter() - t0
        best = max(best, 2 * n * 4 * threads / dt)
    return best


def read_bandwidth(threads, mb=256, reps=5):
    """Read-only bandwidth (bytes per second) with `threads` threads each OR-reducing its own
    array of int64 (numpy releases the GIL in the reduction): what streaming indices and
    updates can reach, which the copy bandwidth above, with its writes, does not say."""
    n = mb * (1 << 20) // 8
    arrays = [np.ones(n, np.int64) for _ in range(threads)]
    best = 0.0
    for _ in range(reps):
        ts = [threading.Thread(target=np.bitwise_or.reduce, args=(arrays[i],)) for i in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = max(best, n * 8 * threads / (time.perf_counter() - t0))
    return best


def inputs_file(model_path):
    """The inputs.npz next to a model, if the generator wrote one (else random inputs)."""
    f = Path(model_path).parent / "inputs.npz"
    return f if f.exists() else None


def openvino_tensor(arr):
    """An input array as an OpenVINO tensor; bf16 arrays (stored as bit patterns) copied in."""
    if arr.dtype == bf16.STORAGE:
        return bf16.openvino_tensor(arr)
    return ov.Tensor(np.ascontiguousarray(arr))


def time_openvino(core, model_path, niter):
    compiled = core.compile_model(model_path, "CPU", {
        "INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    given = np.load(inputs_file(model_path)) if inputs_file(model_path) else {}
    for inp in compiled.inputs:
        if inp.get_any_name() in given:
            req.set_tensor(inp, openvino_tensor(given[inp.get_any_name()]))
            continue
        shape = list(inp.get_shape())
        ty = inp.get_element_type()
        rng = np.random.default_rng(1)
        if ty == ov.Type.f32:
            arr = rng.random(shape, dtype=np.float32)
        else:
            arr = rng.integers(0, 10, shape).astype(ty.to_dtype())
        req.set_tensor(inp, ov.Tensor(arr))
    req.infer()  # first inference, not counted
    lat = []
    for _ in range(niter):
        t0 = time.perf_counter()
        req.infer()
        lat.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(lat)


def time_irun(irun, model_path, niter):
    given = inputs_file(model_path)
    extra = ["--inputs", str(given)] if given else []
    out = subprocess.run([irun, "bench", str(model_path), "-niter", str(niter), "--threads", "2", *extra],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"Median:\s+([\d.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--irun", default="target/release/irun")
    ap.add_argument("--old", help="an earlier irun binary, timed in the same rounds")
    ap.add_argument("--niter", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--triad", default="target/release/examples/stream_triad",
                    help="the STREAM triad binary (cargo build --release --example stream_triad)")
    args = ap.parse_args()
    core = ov.Core()
    bw = triad_bandwidth(args.triad)
    print(f"memory copy bandwidth (2 threads, numpy): {memory_bandwidth() / 1e9:.1f} GB/s")
    for threads in (1, 2):
        print(f"memory read bandwidth ({threads} thread(s)): {read_bandwidth(threads) / 1e9:.1f} GB/s")
    rows = []
    for w in DESCRIPTIONS:
        if args.only and w not in args.only:
            continue
        path = Path(args.dir) / w / "model.xml"
        ov_ms, irun_ms, old_ms = [], [], []
        for _ in range(args.rounds):
            if args.old:
                old_ms.append(time_irun(args.old, path, args.niter))
            try:
                ov_ms.append(time_openvino(core, str(path), args.niter))
            except RuntimeError as e:  # e.g. f64 scatters, which OpenVINO CPU does not run
                ov_ms.append(None)
                print(f"{w}: OpenVINO cannot run it: {str(e).splitlines()[0]}", flush=True)
            irun_ms.append(time_irun(args.irun, path, args.niter))
        o = None if None in ov_ms else statistics.median(ov_ms)
        r = statistics.median(irun_ms)
        old = statistics.median(old_ms) if old_ms else None
        floor_ms = minimal_bytes(str(path)) / bw * 1e3
        rows.append((w, o, old, r, floor_ms))
        print(f"{w}: OpenVINO {ov_ms} irun {irun_ms} old {old_ms}", flush=True)
    print()
    old_head = " old irun median | new / old |" if args.old else ""
    print(f"| workload | OpenVINO CPU median |{old_head} irun median | OpenVINO / irun "
          "| floor | irun % of floor |")
    print("|---|---:|" + ("---:|---:|" if args.old else "") + "---:|---:|---:|---:|")
    for w, o, old, r, floor_ms in rows:
        ov_cell, ratio = ("n/a", "n/a") if o is None else (f"{o:.2f} ms", f"{o / r:.2f}x")
        old_cells = f" {old:.2f} ms | {r / old:.2f}x |" if old is not None else ""
        print(f"| {w}. {DESCRIPTIONS[w]} | {ov_cell} |{old_cells} {r:.2f} ms | {ratio} "
              f"| {floor_ms:.2f} ms | {floor_ms / r:.0%} |")


if __name__ == "__main__":
    main()
