#!/usr/bin/env python3
"""RandomUniform-8 goldens from OpenVINO CPU: small models drawing with each alignment and
output type, run three times on one infer request (the tensorflow alignment's sequence goes
on from run to run), as models/random/<case>/{model.xml, inputs.npz, expected.npz} with
outputs run0, run1, run2:

    venv/bin/python tools/gen_random_goldens.py models/random
"""
import json
import os
import sys

import numpy as np
import openvino as ov
import openvino.opset15 as ops

TYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
         "i64": np.int64, "bf16": np.float32}

# name: (output type, global seed, op seed, shape, min, max, alignment)
CASES = {
    "tf_f32_spec": ("f32", 150, 10, [2, 3], 0.0, 1.0, "tensorflow"),
    "tf_f32_range": ("f32", 7, 3, [3, 5], -2.0, 3.0, "tensorflow"),
    "tf_f16": ("f16", 7, 3, [9], 0.0, 1.0, "tensorflow"),
    "tf_f64": ("f64", 7, 3, [9], -1.0, 1.0, "tensorflow"),
    "tf_i32_spec": ("i32", 80, 100, [2, 3], 50, 100, "tensorflow"),
    "tf_i32_negative": ("i32", 7, 3, [11], -50, 50, "tensorflow"),
    "tf_i64": ("i64", 7, 3, [7], 10, 1000, "tensorflow"),
    "tf_op_seed_only": ("f32", 0, 42, [4], 0.0, 1.0, "tensorflow"),
    "pt_f32": ("f32", 150, 10, [6], 0.0, 1.0, "pytorch"),
    "pt_f16": ("f16", 150, 10, [5], -1.0, 1.0, "pytorch"),
    "pt_f64": ("f64", 150, 10, [5], 0.0, 4.0, "pytorch"),
    "pt_i32_negative": ("i32", 150, 10, [6], -50, 50, "pytorch"),
    "pt_i64": ("i64", 150, 10, [6], 10, 1000, "pytorch"),
    "pt_long": ("f32", 3, 0, [700], 0.0, 1.0, "pytorch"),
}


def model(ty, gs, os_, shape, lo, hi, align, shape_input):
    dt = TYPES[ty]
    if shape_input:
        s = ops.parameter([len(shape)], np.int64, name="shape")
        s.output(0).get_tensor().set_names({"shape"})
        params = [s]
    else:
        s = ops.constant(np.array(shape, np.int64))
        params = []
    r = ops.random_uniform(s, ops.constant(np.array(lo, dt)), ops.constant(np.array(hi, dt)),
                           ty, gs, os_, alignment=align)
    r.output(0).get_tensor().set_names({"out"})
    return ov.Model([r.output(0)], params, "random")


def main(out):
    core = ov.Core()
    names = []
    cases = dict(CASES)
    cases["tf_f32_shape_input"] = ("f32", 11, 5, [4, 2], 0.0, 10.0, "tensorflow")
    for name, (ty, gs, os_, shape, lo, hi, align) in cases.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        shape_input = name.endswith("shape_input")
        m = model(ty, gs, os_, shape, lo, hi, align, shape_input)
        xml = os.path.join(d, "model.xml")
        ov.save_model(m, xml, compress_to_fp16=False)
        inputs = {"shape": np.array(shape, np.int64)} if shape_input else {}
        np.savez(os.path.join(d, "inputs.npz"), **inputs)
        request = core.compile_model(core.read_model(xml), "CPU",
                                     {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
        runs = {f"run{i}": np.array(request.infer(inputs)[0]) for i in range(3)}
        np.savez(os.path.join(d, "expected.npz"), **runs)
        names.append(name)
        print(name, runs["run0"].ravel()[:4], runs["run1"].ravel()[:2])
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"about": "RandomUniform-8 goldens (tools/gen_random_goldens.py): "
                            "tests/random_uniform.rs runs each model three times on one "
                            "compiled model and compares run0..run2 bit for bit.",
                   "goldens": sorted(names)}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
