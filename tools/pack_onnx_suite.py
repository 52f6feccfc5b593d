#!/usr/bin/env python3
"""Pack the ONNX backend node suite, converted to IR by tools/convert_onnx_suite.py, into the
archive the Rust tests read (`models/onnx_suite/ir.zip`) with a manifest of what OpenVINO
does with each file.

    venv/bin/python tools/convert_onnx_suite.py /tmp/onnx_ir
    venv/bin/python tools/run_onnx_suite.py /tmp/onnx_ir --json /tmp/results.json
    venv/bin/python tools/pack_onnx_suite.py /tmp/onnx_ir /tmp/results.json

For every converted test the archive holds `<test>/model.xml` and `<test>/model.bin`, and, when
the suite's data can be stored as plain .npy arrays, `<test>/inputs.npz` (keyed by the ONNX
input names, which the IR's Parameters carry) and `<test>/expected.npz` (the suite's outputs,
in output order, keyed `output_<i>`). `manifest.json` lists every test with `compiles`
(OpenVINO CPU's `compile_model` accepted the IR) and, for a file it compiles, `openvino`:
`pass` when its outputs match the suite's within rtol 1e-3 / atol 1e-7, else `fail`; and
`irun: pass` for the tests that irun passed in the run_onnx_suite.py results given (the
comparison there is with the suite's outputs, never with irun's own).
`tests/onnx_suite.rs` checks every file OpenVINO compiles with irun, expecting no error, and
runs every test marked `irun: pass` against its expected.npz, so a passing test cannot
silently start failing.
"""
import io
import json
import os
import sys
import warnings
import zipfile

import numpy as np
import openvino as ov

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_onnx_suite import array, close, inputs_of, model_inputs, run_openvino  # noqa: E402
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "onnx_suite")


def npz_bytes(arrays):
    """An .npz of plain arrays, or None when one cannot be stored without pickling."""
    if any(np.asarray(a).dtype.kind in "OSUV" for a in arrays.values()):
        return None
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def main():
    src = sys.argv[1]
    results = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            results = json.load(f)
    os.makedirs(ROOT, exist_ok=True)
    core = ov.Core()
    manifest = {}
    cases = {c.name: c for c in collect_testcases()}
    with zipfile.ZipFile(os.path.join(ROOT, "ir.zip"), "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name in sorted(os.listdir(src)):
            xml = os.path.join(src, name, "model.xml")
            if not os.path.exists(xml):
                continue
            for f in ("model.xml", "model.bin"):
                p = os.path.join(src, name, f)
                if os.path.exists(p):
                    z.write(p, f"{name}/{f}")
            entry = {}
            try:
                core.compile_model(xml, "CPU")
                entry["compiles"] = True
            except Exception:  # noqa: BLE001 - a model OpenVINO cannot compile is data here
                entry["compiles"] = False
            case = cases.get(name)
            if case is not None and case.data_sets:
                data = case.data_sets[0]
                feed = model_inputs(core, xml, inputs_of(case, data))
                want = {f"output_{i}": array(v) for i, v in enumerate(data[1])}
                ins, outs = npz_bytes(feed), npz_bytes(want)
                if ins is not None and outs is not None:
                    z.writestr(f"{name}/inputs.npz", ins)
                    z.writestr(f"{name}/expected.npz", outs)
                    entry["data"] = True
                if entry["compiles"]:
                    status, got, _ = run_openvino(core, xml, feed)
                    if status == "ran":
                        ok = len(got) == len(want) and all(
                            close(g, w) is None for g, w in zip(got, want.values()))
                        status = "pass" if ok else "fail"
                    entry["openvino"] = status
            if entry.get("data") and results.get(name, {}).get("irun", {}).get("status") == "pass":
                entry["irun"] = "pass"
            manifest[name] = entry
    with open(os.path.join(ROOT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=0, sort_keys=True)
        f.write("\n")
    compiled = sum(e["compiles"] for e in manifest.values())
    passed = sum(e.get("openvino") == "pass" for e in manifest.values())
    print(f"{len(manifest)} IR files, {compiled} compiled by OpenVINO CPU, {passed} pass on it")


if __name__ == "__main__":
    main()
