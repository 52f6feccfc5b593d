#!/usr/bin/env python3
"""Convert the ONNX backend node test suite (shipped in the `onnx` package) to IR with OpenVINO,
and record OpenVINO's view of each written file for tools/compare_info.py.

    venv/bin/pip install openvino numpy onnx
    venv/bin/python tools/convert_onnx_suite.py [OUT_DIR]      # default tools/out/onnx

Each converted test becomes OUT_DIR/<test>/model.xml + model.bin + ov_view.json. Tests that
OpenVINO cannot convert are listed in OUT_DIR/unconverted.txt. Nothing here is committed
except a small sample copied into models/onnx_sample by hand.
"""
import json
import os
import sys
import tempfile

import onnx
import openvino as ov
from onnx.backend.test.case.node import collect_testcases

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_reader_goldens import ov_view  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "onnx")
    os.makedirs(out, exist_ok=True)
    cases = collect_testcases()
    written, failed = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            try:
                path = os.path.join(tmp, "m.onnx")
                onnx.save(case.model, path)
                model = ov.convert_model(path)
                d = os.path.join(out, case.name)
                os.makedirs(d, exist_ok=True)
                xml = os.path.join(d, "model.xml")
                ov.save_model(model, xml, compress_to_fp16=False)
                with open(os.path.join(d, "ov_view.json"), "w") as f:
                    json.dump(ov_view(xml), f, sort_keys=True)
                written += 1
            except Exception as e:  # noqa: BLE001 - an unconvertible test is data, not a bug here
                failed.append(f"{case.name}: {str(e).splitlines()[0][:160] if str(e) else type(e).__name__}")
    with open(os.path.join(out, "unconverted.txt"), "w") as f:
        f.write("\n".join(failed) + "\n")
    print(f"{len(cases)} ONNX node tests, {written} converted to IR, {len(failed)} not convertible")


if __name__ == "__main__":
    main()
