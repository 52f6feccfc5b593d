#!/usr/bin/env python3
"""Run the ONNX backend node suite, converted to IR by tools/convert_onnx_suite.py, with irun and
with OpenVINO CPU, and compare both with the outputs the ONNX suite ships for each test.

    venv/bin/pip install openvino numpy onnx
    cargo build --release
    venv/bin/python tools/run_onnx_suite.py [IR_DIR] [--irun target/release/irun] [--only SUBSTR]
                                          [--json RESULTS.json]

IR_DIR defaults to tools/out/onnx. Each test is "pass" when every output has the expected
shape and its values match within the ONNX backend's tolerance (rtol 1e-3, atol 1e-7; NaN
where NaN is expected), and otherwise "fail" (wrong values or shapes), "refused" (irun exits 1
before running: an unsupported op or a check error), "error" (any other exit) or "panic"
(exit 101 or a signal). Prints one line per test that irun does not pass and a summary.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import openvino as ov
from onnx.backend.test.case.node import collect_testcases

RTOL, ATOL = 1e-3, 1e-7
warnings.filterwarnings("ignore")


def widen_bf16(a):
    """bf16 as irun writes it (2-byte void, numpy's view of ml_dtypes.bfloat16) as f32."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a


def close(got, want):
    got, want = widen_bf16(np.asarray(got)), widen_bf16(np.asarray(want))
    if want.dtype == np.uint16 and got.dtype == np.float32:
        want = widen_bf16(want.view("V2"))
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if want.dtype.kind in "fc":
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~(np.isclose(g, w, rtol=RTOL, atol=ATOL) | (np.isnan(g) & np.isnan(w)))
    elif want.dtype.kind in "OSU":
        bad = np.asarray(got.astype(str) != want.astype(str))
    else:
        bad = np.asarray(got != want)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {bad.size} values differ, first at {list(i)}: {got[i]!r} != {want[i]!r}"
    return None


def array(v):
    """A test value as numpy: the suite stores values of types numpy lacks (bf16, float8,
    int4) and some of its others as TensorProtos, which `np.asarray` would wrap in an object
    array; onnx decodes them (bf16 and the narrow types as ml_dtypes arrays)."""
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v)
    return np.asarray(v)


def inputs_of(case, data):
    """The test's inputs keyed by the ONNX graph's input names (what the converted IR's
    Parameters are named), leaving out optional inputs given as empty names."""
    names = [i.name for i in case.model.graph.input]
    inits = {i.name for i in case.model.graph.initializer}
    names = [n for n in names if n not in inits]
    return {n: array(v) for n, v in zip(names, data[0])}


def model_inputs(core, xml, feed):
    """The entries of `feed` the IR still takes as inputs: OpenVINO's converter turns inputs
    with constant test data (a Reduce's `axes`) into Consts."""
    names = set()
    for port in core.read_model(xml).inputs:
        names.update(port.get_names())
        # A Parameter whose tensor took another name (an identity Max of one input) is
        # still fed by its own name.
        names.add(port.get_node().get_friendly_name())
    return {k: v for k, v in feed.items() if k in names}


def run_irun(binary, xml, feed, tmp):
    inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
    np.savez(inp, **feed)
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([binary, "run", xml, "--inputs", inp, "--outputs", out],
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 0:
        with np.load(out) as z:
            return "ran", [z[k] for k in z.files], None
    msg = (p.stderr.strip().splitlines() or [""])[-1][:200]
    if p.returncode == 101 or p.returncode < 0:
        return "panic", None, msg
    # Exit 1 before running: an op irun does not support, or a model it finds invalid.
    refused = p.returncode == 1 and ("does not support" in p.stderr or "error[E04" in p.stderr
                                     or "error[E05" in p.stderr)
    return ("refused" if refused else "error"), None, msg


def run_openvino(core, xml, feed):
    try:
        compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    except Exception as e:  # noqa: BLE001 - a model OpenVINO cannot compile is data here
        return "refused", None, str(e).splitlines()[0][:160]
    try:
        req = compiled.create_infer_request()
        by_name = {}
        for i, port in enumerate(compiled.inputs):
            for n in sorted(port.get_names()) + [port.get_node().get_friendly_name()]:
                if n in feed:
                    by_name[i] = feed[n]
        res = req.infer(by_name)
        return "ran", [np.asarray(res[o]) for o in compiled.outputs], None
    except Exception as e:  # noqa: BLE001
        return "error", None, str(e).splitlines()[0][:160]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir_dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "onnx"))
    ap.add_argument("--irun", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "irun"))
    ap.add_argument("--only", default="", help="comma-separated substrings; a case runs if its name holds one")
    ap.add_argument("--json")
    args = ap.parse_args()
    core = ov.Core()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in collect_testcases():
            if not any(part in case.name for part in args.only.split(",")):
                continue
            xml = os.path.join(args.ir_dir, case.name, "model.xml")
            if not os.path.exists(xml) or not case.data_sets:
                continue
            data = case.data_sets[0]
            feed = model_inputs(core, xml, inputs_of(case, data))
            want = [array(v) for v in data[1]]
            row = {}
            for who, (status, got, msg) in (("irun", run_irun(args.irun, xml, feed, tmp)),
                                             ("openvino", run_openvino(core, xml, feed))):
                if status == "ran":
                    diffs = [close(g, w) for g, w in zip(got, want)]
                    if len(got) != len(want):
                        diffs.append(f"{len(got)} outputs, {len(want)} expected")
                    bad = [d for d in diffs if d]
                    status, msg = ("fail", bad[0]) if bad else ("pass", None)
                row[who] = {"status": status, "detail": msg}
            results[case.name] = row
            if row["irun"]["status"] != "pass":
                print(f"{case.name}: irun {row['irun']['status']}: {row['irun']['detail']} "
                      f"(OpenVINO: {row['openvino']['status']})", flush=True)
    count = lambda who, s: sum(r[who]["status"] == s for r in results.values())  # noqa: E731
    for who in ("irun", "openvino"):
        print(f"{who}: " + ", ".join(f"{count(who, s)} {s}" for s in ("pass", "fail", "refused", "error", "panic"))
              + f" of {len(results)}")
    both = [n for n, r in results.items() if r["openvino"]["status"] == "pass" and r["irun"]["status"] != "pass"]
    print(f"OpenVINO passes, irun does not: {len(both)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    sys.exit(main())
