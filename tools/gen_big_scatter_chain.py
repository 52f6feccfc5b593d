#!/usr/bin/env python3
"""Write a 5,000-layer IR (a chain of 1,249 ScatterElementsUpdate-12 layers, each with its own
indices/updates/axis Consts) for timing `irun check`:

    venv/bin/python tools/gen_big_scatter_chain.py tools/out/chain5000
    hyperfine -N 'target/release/irun check tools/out/chain5000/model.xml'
"""
import os
import sys

import numpy as np
import openvino as ov
from openvino import opset15 as ops

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = ops.parameter([64, 32], ov.Type.f32, name="x")
h = x
for i in range(1249):
    idx = ops.constant(np.full((4, 32), i % 64, dtype=np.int64) + np.arange(4).reshape(4, 1) % 64)
    upd = ops.constant(np.full((4, 32), float(i), dtype=np.float32))
    axis = ops.constant(np.array(0, dtype=np.int64) + (i % 2) * 0)
    h = ops.scatter_elements_update(h, idx, upd, axis, "sum", True)
model = ov.Model([h], [x], "chain5000")
ov.save_model(model, os.path.join(out, "model.xml"), compress_to_fp16=False)
print("layers:", len(model.get_ordered_ops()))
