#!/usr/bin/env python3
"""Write the f16-compressed form of a model directory, as OpenVINO's `save_model` writes every
model by default (`compress_to_fp16=True`: each large f32 Const becomes an f16 Const and a
Convert), with the same inputs.npz and an expected.npz from OpenVINO CPU (f32 inference
precision) on the compressed weights:

    venv/bin/python tools/compress_weights.py models/real/mobilenet_v3 models/real/mobilenet_v3_f16
"""
import os
import shutil
import sys

import numpy as np
import openvino as ov

from ov_expected import openvino_expected


def main(src, dst):
    os.makedirs(dst, exist_ok=True)
    core = ov.Core()
    ov.save_model(core.read_model(os.path.join(src, "model.xml")), os.path.join(dst, "model.xml"),
                  compress_to_fp16=True)
    shutil.copy(os.path.join(src, "inputs.npz"), os.path.join(dst, "inputs.npz"))
    xml = os.path.join(dst, "model.xml")
    inputs = dict(np.load(os.path.join(dst, "inputs.npz")))
    expected = openvino_expected(xml, inputs)
    np.savez(os.path.join(dst, "expected.npz"), **expected)
    converts = sum(op.get_type_name() == "Convert" for op in core.read_model(xml).get_ops())
    print(f"{dst}: {converts} Convert(s), outputs {list(expected)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
