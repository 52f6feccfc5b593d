#!/usr/bin/env python3
"""Checks the reduction workloads of tools/gen_bench_models.py (sum_/max_/mean_/ndsum_<dist>,
and the typed sum_<dist>_<type>, max_<dist>_f32)
against a sequential numpy reference, bit for bit, with `irun run --threads 1, 2 and 3` (a
first run) and with `irun bench --outputs` (the run after --repeat timed ones: an op keeps
nothing between runs that could change its way, and this checks that the last run agrees).

numpy's ufunc.at applies the updates one at a time in index order, in the array's own type:
exactly the row-major order the scatter contract promises, so float sums must match to the
bit. Mean (use_init_val=false) is the f32 sum over the updates divided by their count. f16
and bf16 data accumulate in f32 and are rounded once.

    /tmp/ov/bin/python tools/check_reductions.py tools/out/bench --irun target/release/irun
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import bf16


def reference(kind, z):
    data, idx, upd = z["data"], z["indices"], z["updates"]
    if data.dtype == np.float16:
        # f16 accumulates in f32 and is rounded once (irun's contract; OpenVINO CPU converts
        # f16 scatters to f32 and back too).
        wide = {k: z[k].astype(np.float32) if z[k].dtype == np.float16 else z[k] for k in z.files}
        return reference(kind, wide).astype(np.float16)
    if data.dtype == bf16.STORAGE:
        # bf16 likewise, rounded to nearest even.
        wide = {k: bf16.to_f32(z[k]) if z[k].dtype == bf16.STORAGE else z[k] for k in z.files}
        return bf16.stored(reference(kind, wide))
    out = data.copy()
    if kind == "sum":
        np.add.at(out, idx, upd)
    elif kind == "max":
        np.maximum.at(out, idx, upd)
    elif kind == "ndsum":
        np.add.at(out, idx[:, 0], upd)
    elif kind == "mean":
        sums = np.zeros_like(data)
        counts = np.zeros(data.shape, np.int64)
        cols = np.broadcast_to(np.arange(idx.shape[1]), idx.shape)
        np.add.at(sums, (idx, cols), upd)
        np.add.at(counts, (idx, cols), 1)
        hit = counts > 0
        out[hit] = sums[hit] / counts[hit].astype(np.float32)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--irun", default="target/release/irun")
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2, 3])
    ap.add_argument("--repeat", type=int, default=20,
                    help="timed runs before the checked one of `bench --outputs` (0: run only)")
    args = ap.parse_args()
    failed = 0
    for d in sorted(Path(args.dir).iterdir()):
        kind = d.name.split("_")[0]
        if kind not in ("sum", "max", "mean", "ndsum") or not (d / "inputs.npz").exists():
            continue
        z = np.load(d / "inputs.npz")
        want = reference(kind, z)
        model = ["--inputs", str(d / "inputs.npz"), str(d / "model.xml")]
        ways = [("first run", ["run"])]
        if args.repeat > 0:
            ways.append((f"after {args.repeat}", ["bench", "-niter", str(args.repeat)]))
        for t in args.threads:
            for label, command in ways:
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "out.npz"
                    subprocess.run([args.irun, *command, *model, "--threads", str(t), "--outputs", str(out)],
                                   check=True, stdout=subprocess.DEVNULL)
                    got = np.load(out)["out"]
                same = got.dtype == want.dtype and got.shape == want.shape and \
                    np.array_equal(got.view(np.uint8), want.view(np.uint8))
                failed += not same
                print(f"{d.name} threads={t} {label}: {'bit-identical' if same else 'DIFFERS'}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
