#!/usr/bin/env python3
"""The ONNX backend node tests for LSTM, GRU and RNN (shipped in the `onnx` package) as an
independent check of irun's recurrent ops: each test is converted to IR by OpenVINO, run by
`irun run` and by OpenVINO CPU on the test's inputs, and both are compared with the outputs
ONNX's reference computed. irun runs the IR as written, so where OpenVINO's ONNX frontend
converts a test into a different computation (it drops LSTM peepholes; it reads `layout=1`,
batch-major, as sequence-major), irun agrees with OpenVINO and both differ from ONNX.

    python3 -m venv /tmp/ov && /tmp/ov/bin/pip install openvino numpy onnx
    /tmp/ov/bin/python tools/check_onnx_recurrent.py --irun target/release/irun [--out DIR]
"""
import argparse
import os
import subprocess
import tempfile
import warnings

import numpy as np
import onnx
import openvino as ov
from onnx.backend.test.case.node import collect_testcases

PREFIXES = ("test_lstm", "test_gru", "test_rnn", "test_simple_rnn")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--irun", default="target/release/irun")
    ap.add_argument("--out", default=None, help="where the converted tests go (default: a temporary dir)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp()
    core = ov.Core()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the suite's generators warn about casts
        cases = [c for c in collect_testcases() if c.name.startswith(PREFIXES)]
    print("| test | output | irun - ONNX | irun - OpenVINO | OpenVINO - ONNX |")
    print("|---|---|---:|---:|---:|")
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        xml = os.path.join(d, "model.xml")
        ov.save_model(ov.convert_model(os.path.join(d, "model.onnx")), xml, compress_to_fp16=False)
        compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        for inputs, expected in case.data_sets:
            feeds = {i.name: v for i, v in zip(case.model.graph.input, inputs)}
            np.savez(os.path.join(d, "inputs.npz"), **feeds)
            outputs = os.path.join(d, "outputs.npz")
            subprocess.run([args.irun, "run", xml, "--inputs", os.path.join(d, "inputs.npz"),
                            "--outputs", outputs], check=True, capture_output=True)
            got = np.load(outputs)
            theirs = compiled(feeds)
            for i, (out_info, want) in enumerate(zip(case.model.graph.output, expected)):
                mine = got[got.files[i]]
                cpu = theirs[compiled.outputs[i]]

                def diff(a, b):
                    if a.shape != b.shape:
                        return f"shape {list(a.shape)} vs {list(b.shape)}"
                    return f"{np.abs(a.astype(np.float64) - b).max():.1e}"

                print(f"| {case.name} | {out_info.name} | {diff(mine, want)} | {diff(mine, cpu)} | {diff(cpu, want)} |")


if __name__ == "__main__":
    main()
