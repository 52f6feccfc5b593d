#!/usr/bin/env python3
"""Golden cases for stateful models (ReadValue/Assign), written with OpenVINO's Python API and
run step by step in one OpenVINO infer request (CPU, INFERENCE_PRECISION_HINT=f32):

  models/stateful/kv_cache   an attention block whose K and V caches [1,H,S,D] are variables:
                             each step writes its T new positions with ScatterUpdate-3 along
                             axis 2 and attends over the whole cache. `k_cache` starts from a
                             Broadcast of zeros (ReadValue-6 with an initial-value input),
                             `v_cache` from the variable's own zeros (ReadValue-6 without one),
                             and `steps` is an i32 counter (ReadValue-3 + Add + Assign-3).
  models/stateful/growing    a cache that grows by Concat along a dynamic axis (variable shape
                             [1,?,4]), the pattern of OpenVINO's LLM exports.

Each case has step<k>_inputs.npz and step<k>_expected.npz (OpenVINO's outputs) for k = 0..,
then `reset_state()` and one more step: reset_inputs.npz / reset_expected.npz; and
state_expected.npz, OpenVINO's `query_state()` after the last step before the reset.
tests/stateful.rs replays them.

    python3 -m venv /tmp/ov && /tmp/ov/bin/pip install openvino numpy
    /tmp/ov/bin/python tools/gen_stateful_goldens.py
"""
import os

import numpy as np
import openvino as ov
import openvino.opset3 as o3
import openvino.opset6 as o6
import openvino.opset13 as ops
from openvino.op.util import Variable, VariableInfo

ROOT = os.path.join(os.path.dirname(__file__), "..", "models", "stateful")


def variable(name, ty, shape):
    info = VariableInfo()
    info.variable_id = name
    info.data_type = ty
    info.data_shape = ov.PartialShape(shape)
    return Variable(info)


def kv_cache(h=2, s=8, d=4, t=2):
    q = ops.parameter([1, h, t, d], np.float32, name="q")
    k_new = ops.parameter([1, h, t, d], np.float32, name="k_new")
    v_new = ops.parameter([1, h, t, d], np.float32, name="v_new")
    pos = ops.parameter([t], np.int64, name="pos")
    k_var = variable("k_cache", ov.Type.f32, [1, h, s, d])
    v_var = variable("v_cache", ov.Type.f32, [1, h, s, d])
    zeros = ops.broadcast(ops.constant(np.float32(0)), ops.constant(np.array([1, h, s, d], np.int64)))
    k_past = o6.read_value(zeros, k_var)
    v_past = o6.read_value(v_var)
    axis = ops.constant(np.int64(2))
    k = ops.scatter_update(k_past, pos, k_new, axis)
    v = ops.scatter_update(v_past, pos, v_new, axis)
    scores = ops.multiply(ops.matmul(q, k, False, True), ops.constant(np.float32(1 / np.sqrt(d))))
    out = ops.matmul(ops.softmax(scores, -1), v, False, False)
    # opset3's ReadValue and Assign name their variable by id.
    count = ops.add(o3.read_value(ops.constant(np.array([0], np.int32)), "steps"), ops.constant(np.array([1], np.int32)))
    sinks = [o6.assign(k, k_var), o6.assign(v, v_var), o3.assign(count, "steps")]
    results = [ops.result(out), ops.result(count)]
    results[0].output(0).set_names({"out"})
    results[1].output(0).set_names({"steps_done"})
    model = ov.Model(results, sinks, [q, k_new, v_new, pos], "kv_cache")
    rng = np.random.default_rng(7)
    steps = []
    for k in range(s // t):
        steps.append({
            "q": rng.standard_normal([1, h, t, d]).astype(np.float32),
            "k_new": rng.standard_normal([1, h, t, d]).astype(np.float32),
            "v_new": rng.standard_normal([1, h, t, d]).astype(np.float32),
            # Positions written out of order and one rewritten, as a sliding cache does.
            "pos": np.array([(t * k + 1) % s, t * k], np.int64) if k != 2 else np.array([1, 5], np.int64),
        })
    return model, steps


def growing(d=4):
    x = ops.parameter([1, -1, d], np.float32, name="x")
    var = variable("history", ov.Type.f32, [1, -1, d])
    past = o6.read_value(var)
    cat = ops.concat([past, x], 1)
    total = ops.reduce_sum(cat, ops.constant(np.array([1], np.int64)), False)
    sinks = [o6.assign(cat, var)]
    results = [ops.result(cat), ops.result(total)]
    results[0].output(0).set_names({"history_out"})
    results[1].output(0).set_names({"total"})
    model = ov.Model(results, sinks, [x], "growing")
    rng = np.random.default_rng(11)
    steps = [{"x": rng.standard_normal([1, n, d]).astype(np.float32)} for n in (3, 1, 2)]
    return model, steps


def write(name, model, steps):
    out = os.path.join(ROOT, name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    ov.save_model(model, os.path.join(out, "model.xml"), compress_to_fp16=False)
    core = ov.Core()
    compiled = core.compile_model(os.path.join(out, "model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()

    def infer(inputs):
        r = request.infer(inputs)
        return {o.get_any_name(): np.array(v) for o, v in r.items()}

    for k, inputs in enumerate(steps):
        np.savez(os.path.join(out, f"step{k}_inputs.npz"), **inputs)
        np.savez(os.path.join(out, f"step{k}_expected.npz"), **infer(inputs))
    np.savez(os.path.join(out, "state_expected.npz"),
             **{s.name: np.array(s.state.data) for s in request.query_state()})
    request.reset_state()
    np.savez(os.path.join(out, "reset_inputs.npz"), **steps[-1])
    np.savez(os.path.join(out, "reset_expected.npz"), **infer(steps[-1]))
    print(name, len(steps), "steps")


if __name__ == "__main__":
    write("kv_cache", *kv_cache())
    write("growing", *growing())
