#!/usr/bin/env python3
"""Dense-model benchmark: builds full-size models with OpenVINO's opset API (random weights,
nothing downloaded) and times OpenVINO CPU and `irun bench` on the same IR files in the same
run, alternating, for `--rounds` rounds; prints medians, OpenVINO/irun ratios, their geometric
mean, and each tool's peak RSS.

  resnet18    torchvision's ResNet-18 layout (BatchNorm folded into the convolutions, as
              OpenVINO's converter folds it), 1x3x224x224
  bert_block  4 transformer encoder layers (hidden 256, 4 heads, sequence 128, GELU MLP 1024,
              LayerNorm as MVN), the attention written out as MatMul/Softmax the way
              converted BERT models have it
  lstm        LSTMSequence-5, batch 1, 128 steps, 256 inputs and units (a speech or text
              encoder run one utterance at a time)
  lstm_bidir  bidirectional LSTMSequence-5, batch 16, 64 steps, 256 inputs and units
  gru         GRUSequence-5, batch 8, 100 steps, 128 inputs, 256 units
  rnn         reverse RNNSequence-5, batch 4, 200 steps, 64 inputs, 128 units
  softmax_channels, log_softmax_channels, argmax_channels
              SoftMax, LogSoftmax and TopK (k=1, the indices) over the channels of
              [1, 21, 128, 128]: a segmentation head's per-pixel ops on a non-innermost axis
  upsample_nearest, upsample_linear, deconv, pad_reflect
              a decoder's layers: Interpolate-11 nearest and linear_onnx [1,128,64,64] to
              128x128, ConvolutionBackpropData 128 -> 64 channels 4x4 stride 2 on 32x32,
              reflect Pad-12 of [1,64,128,128] by 1

OpenVINO: CPU, INFERENCE_NUM_THREADS=2, PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32.
irun: `irun bench MODEL -niter N --threads 2`. `--threads T` sets both.

`--old BINARY` also times an earlier irun in the same rounds (new, then old, then OpenVINO,
alternating) and prints a table of old against new by medians and by minima: on a noisy VM
the minimum of each run's inferences moves far less than the median, and it is what an A/B
of a kernel change should be decided by (docs/benchmarks.md, thirty-eighth session).

    /tmp/ov/bin/python tools/bench_models.py tools/out/models --irun target/release/irun \
        --extra tools/out/real/resnet18 tools/out/real/mobilenet_v3 tools/out/real/bert

The family models (a detector with NMS, a U-Net, a ROIAlign/GridSample head, a scripted Loop
decoder, a TensorIterator RNN) at benchmark sizes come from
`tools/convert_family_models.py --full`; add them with
`--extra tools/out/families_full/*` (and `--only` with no names to time only those).
"""

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset5 as o5
import openvino.opset6 as o6
import openvino.opset7 as o7
import openvino.opset8 as o8
import openvino.opset11 as o11
import openvino.opset12  # noqa: F401 - ov.opset12.pad

rng = np.random.default_rng(7)


def const(v, dtype=np.float32):
    return o1.constant(np.array(v, dtype=dtype))


def conv(x, cin, cout, k, s, relu=True):
    w = const(rng.standard_normal((cout, cin, k, k)) * math.sqrt(2.0 / (cin * k * k)))
    y = o1.convolution(x, w, [s, s], [k // 2, k // 2], [k // 2, k // 2], [1, 1])
    y = o1.add(y, const(rng.standard_normal((1, cout, 1, 1)) * 0.1))
    return o1.relu(y) if relu else y


def resnet18():
    x = o1.parameter([1, 3, 224, 224], np.float32, name="image")
    y = conv(x, 3, 64, 7, 2)
    y = o1.max_pool(y, [2, 2], [1, 1], [1, 1], [3, 3], "floor")
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            h = conv(y, cin, cout, 3, s)
            h = conv(h, cout, cout, 3, 1, relu=False)
            skip = conv(y, cin, cout, 1, s, relu=False) if (s != 1 or cin != cout) else y
            y = o1.relu(o1.add(h, skip))
            cin = cout
    y = o1.reduce_mean(y, const([2, 3], np.int64), False)
    y = o1.add(o1.matmul(y, const(rng.standard_normal((512, 1000)) * 0.03), False, False),
               const(rng.standard_normal(1000) * 0.01))
    return ov.Model([o1.result(y)], [x], "resnet18"), {"image": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}


def bert_block(layers=4, hidden=256, heads=4, seq=128, mlp=1024):
    x = o1.parameter([1, seq, hidden], np.float32, name="hidden")
    y = x
    dh = hidden // heads

    def linear(t, n_in, n_out):
        w = const(rng.standard_normal((n_in, n_out)) * math.sqrt(1.0 / n_in))
        return o1.add(o1.matmul(t, w, False, False), const(rng.standard_normal(n_out) * 0.02))

    def norm(t):
        t = o6.mvn(t, const([-1], np.int64), True, 1e-12, "inside_sqrt")
        return o1.add(o1.multiply(t, const(1 + 0.1 * rng.standard_normal(hidden))), const(0.1 * rng.standard_normal(hidden)))

    def split_heads(t):
        t = o1.reshape(t, const([1, seq, heads, dh], np.int64), False)
        return o1.transpose(t, const([0, 2, 1, 3], np.int64))

    for _ in range(layers):
        q, k, v = (split_heads(linear(y, hidden, hidden)) for _ in range(3))
        scores = o1.multiply(o1.matmul(q, k, False, True), const(1.0 / math.sqrt(dh)))
        probs = o8.softmax(scores, -1)
        ctx = o1.transpose(o1.matmul(probs, v, False, False), const([0, 2, 1, 3], np.int64))
        ctx = o1.reshape(ctx, const([1, seq, hidden], np.int64), False)
        y = norm(o1.add(y, linear(ctx, hidden, hidden)))
        h = o7.gelu(linear(y, hidden, mlp), "erf")
        y = norm(o1.add(y, linear(h, mlp, hidden)))
    return ov.Model([o1.result(y)], [x], "bert_block"), {"hidden": rng.standard_normal((1, seq, hidden)).astype(np.float32)}


def recurrent(kind, batch, steps, inputs, hidden, direction):
    """A `kind` sequence layer with constant weights (scaled so the states stay in range),
    zero initial states and full lengths."""
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    x = o1.parameter([batch, steps, inputs], np.float32, name="x")
    x.output(0).set_names({"x"})
    zeros = const(np.zeros((batch, dirs, hidden)))
    lengths = const(np.full(batch, steps), np.int32)
    w = const(rng.standard_normal((dirs, gates * hidden, inputs)) / np.sqrt(inputs))
    r = const(rng.standard_normal((dirs, gates * hidden, hidden)) / np.sqrt(hidden))
    b = const(rng.standard_normal((dirs, gates * hidden)) * 0.1)
    if kind == "lstm":
        y = o5.lstm_sequence(x, zeros, zeros, lengths, w, r, b, hidden, direction)
    elif kind == "gru":
        y = o5.gru_sequence(x, zeros, lengths, w, r, b, hidden, direction)
    else:
        y = o5.rnn_sequence(x, zeros, lengths, w, r, b, hidden, direction)
    return ov.Model([o1.result(y.output(0))], [x], kind), {
        "x": rng.standard_normal((batch, steps, inputs)).astype(np.float32)}


def along_channels(op):
    """A segmentation head's per-pixel op over the 21 class channels of [1, 21, 128, 128]:
    an axis that is not the innermost, where a kernel striding through memory per element is
    several times slower than one vectorised across the inner dims."""
    x = o1.parameter([1, 21, 128, 128], np.float32, name="logits")
    x.output(0).set_names({"logits"})
    if op == "softmax":
        y = o8.softmax(x, 1)
    elif op == "log_softmax":
        y = o5.log_softmax(x, 1)
    else:
        y = o11.topk(x, const(1, np.int64), 1, "max", "value", "i64").output(1)
    return ov.Model([o1.result(y)], [x], op + "_channels"), {
        "logits": rng.standard_normal((1, 21, 128, 128)).astype(np.float32)}


def single_layer(kind):
    """One layer of the kinds a segmenter or detector decoder uses, at a realistic size."""
    if kind == "deconv":
        x = o1.parameter([1, 128, 32, 32], np.float32, name="x")
        w = const(rng.standard_normal((128, 64, 4, 4)) * 0.05)
        y = o1.convolution_backprop_data(x, w, strides=[2, 2], pads_begin=[1, 1],
                                         pads_end=[1, 1], dilations=[1, 1])
    elif kind == "pad_reflect":
        x = o1.parameter([1, 64, 128, 128], np.float32, name="x")
        y = ov.opset12.pad(x, const([0, 0, 1, 1], np.int64), const([0, 0, 1, 1], np.int64),
                           "reflect")
    else:
        x = o1.parameter([1, 128, 64, 64], np.float32, name="x")
        mode = "nearest" if kind == "upsample_nearest" else "linear_onnx"
        y = o11.interpolate(x, const([128, 128], np.int64), mode, "sizes",
                            axes=const([2, 3], np.int64),
                            coordinate_transformation_mode="asymmetric" if mode == "nearest"
                            else "half_pixel", nearest_mode="floor")
    x.output(0).set_names({"x"})
    shape = [d.get_length() for d in x.get_output_partial_shape(0)]
    return ov.Model([o1.result(y)], [x], kind), {
        "x": rng.standard_normal(shape).astype(np.float32)}


MODELS = {
    "resnet18": resnet18,
    "bert_block": bert_block,
    "lstm": lambda: recurrent("lstm", 1, 128, 256, 256, "forward"),
    "lstm_bidir": lambda: recurrent("lstm", 16, 64, 256, 256, "bidirectional"),
    "gru": lambda: recurrent("gru", 8, 100, 128, 256, "forward"),
    "rnn": lambda: recurrent("rnn", 4, 200, 64, 128, "reverse"),
    "softmax_channels": lambda: along_channels("softmax"),
    "log_softmax_channels": lambda: along_channels("log_softmax"),
    "argmax_channels": lambda: along_channels("argmax"),
    "upsample_nearest": lambda: single_layer("upsample_nearest"),
    "upsample_linear": lambda: single_layer("upsample_linear"),
    "deconv": lambda: single_layer("deconv"),
    "pad_reflect": lambda: single_layer("pad_reflect"),
}


def write(out_dir, names):
    for name, build in MODELS.items():
        if name not in names:
            continue
        d = Path(out_dir) / name
        d.mkdir(parents=True, exist_ok=True)
        model, inputs = build()
        ov.save_model(model, str(d / "model.xml"), compress_to_fp16=False)
        np.savez(d / "inputs.npz", **inputs)


def time_openvino(model_path, niter, threads):
    """Median latency, in a child process so that its peak RSS is OpenVINO's alone."""
    code = f"""
import numpy as np, openvino as ov, statistics, time
t0 = time.perf_counter()
core = ov.Core()
c = core.compile_model(core.read_model({str(model_path)!r}), "CPU", {{"INFERENCE_NUM_THREADS": {threads}, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"}})
load = (time.perf_counter() - t0) * 1e3
r = c.create_infer_request()
given = np.load({str(Path(model_path).parent / 'inputs.npz')!r})
for i in c.inputs:
    # np.array, not np.ascontiguousarray, which makes a 0-d input [1].
    r.set_tensor(i, ov.Tensor(np.array(given[i.get_any_name()], order="C")))
r.infer()
lat = []
for _ in range({niter}):
    t0 = time.perf_counter(); r.infer(); lat.append((time.perf_counter() - t0) * 1e3)
# VmHWM, not getrusage's ru_maxrss: Linux keeps ru_maxrss across exec, so a child forked by
# a parent that had built the models reported the parent's 235 MB for every model.
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(statistics.median(lat), hwm, load)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024, float(out[2])


def time_irun(irun, model_path, niter, threads):
    """Median and minimum latency, peak RSS and load time of one `irun bench` run."""
    inputs = Path(model_path).parent / "inputs.npz"
    # GNU time reports the child's own peak RSS (KiB) on stderr.
    # `--json`: the timings unrounded (the text block has two decimals, a fifth of a 0.05 ms
    # model).
    run = subprocess.run(["/usr/bin/time", "-f", "%M", irun, "bench", str(model_path), "-niter", str(niter),
                          "--threads", str(threads), "--inputs", str(inputs), "--json"],
                         check=True, capture_output=True, text=True)
    timings = json.loads(run.stdout)
    rss = int(run.stderr.strip().splitlines()[-1])
    return timings["median_ms"], rss / 1024, timings["load_ms"], timings["min_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--irun", default="target/release/irun")
    ap.add_argument("--niter", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--old", help="an earlier irun binary, timed in the same rounds")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="more model directories (model.xml + inputs.npz), e.g. tools/out/real/*")
    ap.add_argument("--only", nargs="*", default=list(MODELS), choices=list(MODELS),
                    help="the built models to write and time (default: all)")
    args = ap.parse_args()
    if not args.no_write:
        write(args.dir, args.only)
    rows = []
    paths = [(name, Path(args.dir) / name / "model.xml") for name in args.only]
    paths += [(Path(d).name, Path(d) / "model.xml") for d in args.extra]
    old_rows = []
    for name, path in paths:
        ov_ms, irun_ms, ov_rss, irun_rss, loads, ov_loads = [], [], 0.0, 0.0, [], []
        new_min, old_ms, old_min = [], [], []
        for _ in range(args.rounds):
            r, rss, load, least = time_irun(args.irun, path, args.niter, args.threads)
            irun_ms.append(r)
            new_min.append(least)
            irun_rss = max(irun_rss, rss)
            loads.append(load)
            if args.old:
                r, _, _, least = time_irun(args.old, path, args.niter, args.threads)
                old_ms.append(r)
                old_min.append(least)
            o, rss, ov_load = time_openvino(path, args.niter, args.threads)
            ov_ms.append(o)
            ov_loads.append(ov_load)
            ov_rss = max(ov_rss, rss)
        o, r = statistics.median(ov_ms), statistics.median(irun_ms)
        rows.append((name, o, r, ov_rss, irun_rss, statistics.median(loads), statistics.median(ov_loads)))
        print(f"{name}: OpenVINO {ov_ms} irun {irun_ms}" + (f" old {old_ms}" if args.old else ""),
              flush=True)
        if args.old:
            old_rows.append((name, statistics.median(old_ms), r, statistics.median(old_min),
                             statistics.median(new_min)))
    print()
    print("| model | OpenVINO CPU median | irun median | irun / OpenVINO | peak RSS OpenVINO | peak RSS irun | load OpenVINO | load irun |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, o, r, orss, irss, load, ov_load in rows:
        print(f"| {name} | {o:.2f} ms | {r:.2f} ms | {r / o:.2f}x | {orss:.0f} MB | {irss:.0f} MB | {ov_load:.1f} ms | {load:.1f} ms |")
    geo = math.exp(sum(math.log(r / o) for _, o, r, *_ in rows) / len(rows))
    print(f"\ngeometric mean irun / OpenVINO: {geo:.2f}x")
    if old_rows:
        print("\n| model | old median | new median | new / old | old minimum | new minimum | new / old |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, om, nm, omin, nmin in old_rows:
            print(f"| {name} | {om:.2f} ms | {nm:.2f} ms | {nm / om:.3f}x | {omin:.2f} ms | {nmin:.2f} ms | {nmin / omin:.3f}x |")


if __name__ == "__main__":
    main()
