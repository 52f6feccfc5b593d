#!/usr/bin/env python3
"""Per-step latency of a stateful KV cache in OpenVINO CPU and `irun bench`, on the same IR
files in the same run.

Two models, written with OpenVINO's Python API into OUT/<name>/ (model.xml, inputs.npz):
  kv_update     K and V caches [1,32,4096,128] f32 (ReadValue-6/Assign-6, zeros at first), each
                step writes 16 positions with ScatterUpdate-3 along axis 2; the output is the
                16 rows just written (Gather), so the step's work is the update itself
  kv_attention  the same caches and an attention over them: softmax(q k^T / sqrt(d)) v with
                q [1,32,16,128]; the matrix products read the whole cache every step

OpenVINO: one infer request (state carried over), INFERENCE_NUM_THREADS=2, LATENCY hint,
f32 precision. irun: `irun bench OUT/<name>/model.xml -niter N --threads 2 --inputs ...`,
which also carries the state from step to step. A round's figure is the mean step time
(irun: Duration / Count, which has more digits than the printed median for steps of a few
microseconds); both alternate for --rounds rounds and the table has the median round.

    /tmp/ov/bin/python tools/bench_stateful.py --irun target/release/irun
"""

import argparse
import re
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset6 as o6
import openvino.opset13 as ops
from openvino.op.util import Variable, VariableInfo

H, S, D, T = 32, 4096, 128, 16


def variable(name):
    info = VariableInfo()
    info.variable_id = name
    info.data_type = ov.Type.f32
    info.data_shape = ov.PartialShape([1, H, S, D])
    return Variable(info)


def build(attention):
    q = ops.parameter([1, H, T, D], np.float32, name="q")
    k_new = ops.parameter([1, H, T, D], np.float32, name="k_new")
    v_new = ops.parameter([1, H, T, D], np.float32, name="v_new")
    pos = ops.parameter([T], np.int64, name="pos")
    k_var, v_var = variable("k_cache"), variable("v_cache")
    axis = ops.constant(np.int64(2))
    k = ops.scatter_update(o6.read_value(k_var), pos, k_new, axis)
    v = ops.scatter_update(o6.read_value(v_var), pos, v_new, axis)
    if attention:
        scores = ops.multiply(ops.matmul(q, k, False, True), ops.constant(np.float32(1 / np.sqrt(D))))
        out = ops.matmul(ops.softmax(scores, -1), v, False, False)
        params = [q, k_new, v_new, pos]
    else:
        out = ops.add(ops.gather(k, pos, axis), ops.gather(v, pos, axis))
        params = [k_new, v_new, pos]
    result = ops.result(out)
    result.output(0).set_names({"out"})
    return ov.Model([result], [o6.assign(k, k_var), o6.assign(v, v_var)], params)


def write(out, name, attention):
    d = Path(out) / name
    d.mkdir(parents=True, exist_ok=True)
    model = build(attention)
    ov.save_model(model, str(d / "model.xml"), compress_to_fp16=False)
    rng = np.random.default_rng(0)
    inputs = {p.get_friendly_name(): rng.standard_normal(list(p.get_shape())).astype(np.float32)
              for p in model.get_parameters() if p.get_friendly_name() != "pos"}
    inputs["pos"] = np.arange(100, 100 + T, dtype=np.int64)
    np.savez(d / "inputs.npz", **inputs)
    return d


def time_openvino(core, d, niter):
    compiled = core.compile_model(str(d / "model.xml"), "CPU", {
        "INFERENCE_NUM_THREADS": 2, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    inputs = dict(np.load(d / "inputs.npz"))
    for k, v in inputs.items():
        request.set_tensor(k, ov.Tensor(v))
    request.infer()
    t = time.perf_counter()
    for _ in range(niter):
        request.infer()
    return (time.perf_counter() - t) / niter * 1e3


def time_irun(irun, d, niter):
    out = subprocess.run([irun, "bench", str(d / "model.xml"), "-niter", str(niter), "--threads", "2",
                          "--inputs", str(d / "inputs.npz")], check=True, capture_output=True, text=True).stdout
    duration = float(re.search(r"Duration:\s+([\d.]+) ms", out).group(1))
    count = int(re.search(r"Count:\s+(\d+) iterations", out).group(1))
    return duration / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--irun", default="target/release/irun")
    ap.add_argument("--out", default="tools/out/stateful")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--niter", type=int, default=50)
    args = ap.parse_args()
    core = ov.Core()
    print("| model | OpenVINO ms/step | irun ms/step | OpenVINO / irun |")
    print("|---|---:|---:|---:|")
    for name, attention in [("kv_update", False), ("kv_attention", True)]:
        d = write(args.out, name, attention)
        ov_t, ir_t = [], []
        for _ in range(args.rounds):
            ov_t.append(time_openvino(core, d, args.niter))
            ir_t.append(time_irun(args.irun, d, args.niter))
        o, i = statistics.median(ov_t), statistics.median(ir_t)
        print(f"| {name} | {o:.3f} | {i:.3f} | {o / i:.2f} |")


if __name__ == "__main__":
    main()
