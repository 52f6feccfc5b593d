#!/usr/bin/env python3
"""Write the reader golden models into models/reader/ with OpenVINO.

    python3 -m venv venv && venv/bin/pip install openvino numpy
    venv/bin/python tools/gen_reader_goldens.py

Writes:
  models/reader/element_types/   one Const of every element type -> Result; expected.npz holds
                                 the values OpenVINO itself decodes from the written .bin
                                 (Convert-to-f32 constant folding for the packed/narrow types).
  models/reader/forms_v11/       Parameters with every partial-shape form, tensor names with
                                 escaped commas, port rt_info, a compressed f16 weight + Convert.
  models/reader/forms_v10/       the same graph serialized as IR v10.
  <dir>/expected_info.json       OpenVINO's view of the model: ordered-op histogram, inputs and
                                 outputs (names, partial shapes, element types) as read back.
"""
import json
import os
import sys

import numpy as np
import openvino as ov
from openvino import opset15 as ops
from openvino import passes
from openvino.frontend import FrontEndManager

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "reader")

IR_SPELLING = {"Constant": "Const", "Relu": "ReLU", "PRelu": "PReLU", "Softmax": "SoftMax"}


def read_ir(xml_path):
    """The model OpenVINO's IR frontend builds from a file. Core.read_model would also rewrite
    v10 models afterwards (inserting Converts, changing types); that is not the file's content."""
    fe = FrontEndManager().load_by_framework("ir")
    return fe.convert(fe.load(xml_path))


def ov_view(xml_path):
    """What OpenVINO reads from an IR file (used by tests and by compare_info.py)."""
    model = read_ir(xml_path)
    hist = {}
    for op in model.get_ordered_ops():
        name = IR_SPELLING.get(op.get_type_name(), op.get_type_name())
        key = f"{name}-{op.get_type_info().version_id}"
        hist[key] = hist.get(key, 0) + 1

    def port(p):
        return {
            "names": sorted(p.get_names()),
            "shape": str(p.get_partial_shape()),
            "element_type": p.get_element_type().get_type_name(),
        }

    return {
        "ops": dict(sorted(hist.items())),
        "inputs": [port(p) for p in model.inputs],
        "outputs": [port(p) for p in model.outputs],
    }


def fold_to_f32(const):
    """OpenVINO's own decoding of a constant: Convert(f32), constant-folded."""
    m = ov.Model([ops.convert(const, ov.Type.f32)], [])
    pm = passes.Manager()
    pm.register_pass(passes.ConstantFolding())
    pm.run_passes(m)
    return m.get_results()[0].input_value(0).get_node().data.copy()


def write_case(name, model, expected=None, version=None, compress=False):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    xml = os.path.join(d, "model.xml")
    if version == 10:
        passes_ = passes.Manager()
        passes_.register_pass(passes.Serialize(xml, os.path.join(d, "model.bin"), passes.Version.IR_V10))
        passes_.run_passes(model)
    else:
        ov.save_model(model, xml, compress_to_fp16=compress)
    if expected is not None:
        np.savez(os.path.join(d, "expected.npz"), **expected)
    with open(os.path.join(d, "expected_info.json"), "w") as f:
        json.dump(ov_view(xml), f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", d)


def element_types():
    rng = np.random.default_rng(7)
    consts, expected = [], {}

    def add(name, const, values):
        const.set_friendly_name(name)
        consts.append(const)
        expected[name] = values

    # Byte-and-wider types: values chosen to hit extremes and signs; an odd element count keeps
    # later offsets unaligned.
    plain = {
        "boolean": np.array([True, False, True, True, False]),
        "f16": np.array([1.0, -2.0, 65504.0, 6.1e-5, -0.0], dtype=np.float16),
        "f32": np.array([1.5, -3.25, 3.4e38, 1e-45, np.inf], dtype=np.float32),
        "f64": np.array([np.pi, -1e308, 5e-324, 0.0, -np.inf]),
        "i8": np.array([-128, 127, 0, -1, 5], dtype=np.int8),
        "i16": np.array([-32768, 32767, 0, -1, 300], dtype=np.int16),
        "i32": np.array([-(2**31), 2**31 - 1, 0, -1, 70000], dtype=np.int32),
        "i64": np.array([-(2**63), 2**63 - 1, 2**53 + 1, -1, 0], dtype=np.int64),
        "u8": np.array([0, 255, 1, 128, 7], dtype=np.uint8),
        "u16": np.array([0, 65535, 1, 32768, 7], dtype=np.uint16),
        "u32": np.array([0, 2**32 - 1, 1, 2**31, 7], dtype=np.uint32),
        "u64": np.array([0, 2**64 - 1, 2**63 + 5, 1, 7], dtype=np.uint64),
    }
    for name, v in plain.items():
        c = ops.constant(v)
        assert c.get_element_type().get_type_name() == name, (name, c.get_element_type())
        add(name, c, c.data.copy())
    # bf16 has no numpy dtype: build it from f32 and keep the raw 16-bit patterns (<V2).
    c = ops.constant(np.array([1.0, -2.0, 3.140625, 1e30, -0.0], dtype=np.float32), dtype=ov.Type.bf16)
    add("bf16", c, c.data.view(np.uint16).copy().view("V2"))
    # Packed unsigned: OpenVINO's get_vector() unpacks them.
    for t, bits, n in [(ov.Type.u1, 1, 19), (ov.Type.u2, 2, 11), (ov.Type.u3, 3, 13), (ov.Type.u4, 4, 9), (ov.Type.u6, 6, 7)]:
        vals = rng.integers(0, 2**bits, n).tolist()
        c = ov.op.Constant(t, ov.Shape([n]), vals)
        got = np.array(c.get_vector(), dtype=np.uint8)
        assert got.tolist() == vals, (t, got, vals)
        add(t.get_type_name(), c, got)
    # Signed and float narrow types: OpenVINO decodes them for us through Convert folding.
    narrow = [
        (ov.Type.i4, [-8, -1, 0, 1, 7, 3, -5], np.int8),
        (ov.Type.nf4, [-1.0, -0.69, 0.0, 0.08, 0.33, 0.56, 1.0], np.float32),
        (ov.Type.f8e4m3, [1.0, -2.0, 448.0, 0.013671875, -0.001953125, 0.0, 240.0], np.float32),
        (ov.Type.f8e5m2, [1.0, -2.0, 57344.0, 1.52587890625e-05, -0.0, 3.0, np.inf], np.float32),
        (ov.Type.f8e8m0, [1.0, 2.0, 0.5, 2.0**-127, 2.0**127, 1024.0, 0.25], np.float32),
        (ov.Type.f4e2m1, [1.0, -2.0, 0.5, 6.0, -0.0, 1.5, 3.0], np.float32),
    ]
    for t, vals, dt in narrow:
        c = ops.constant(np.array(vals, dtype=np.float32), dtype=t)
        add(t.get_type_name(), c, fold_to_f32(c).astype(dt))
    # Scalars and empties go through the same decoder paths.
    c = ops.constant(np.array(42, dtype=np.int64))
    add("scalar_i64", c, c.data.copy())
    # Strings: OpenVINO packs them as i32 count, i32 offsets, bytes.
    strings = ["ab", "", "xyz", "\u00df", "comma,and\\slash"]
    sc = ov.op.Constant(ov.Tensor(np.array(strings)))
    sc.set_friendly_name("string")
    consts.append(sc)
    with open(os.path.join(ROOT, "element_types_strings.json"), "w") as f:
        json.dump(strings, f)

    results = [ops.result(c) for c in consts]
    for r, c in zip(results, consts):
        r.set_friendly_name("out_" + c.get_friendly_name())
        r.output(0).get_tensor().set_names({"out_" + c.get_friendly_name()})
    write_case("element_types", ov.Model(results, [], "element_types"), expected)


def forms(version):
    shapes = {
        "p_static": ("2,3", ov.Type.f32),
        "p_dynamic": ("?,3", ov.Type.f32),
        "p_interval": ("1..4,3", ov.Type.i64),
        "p_upper": ("..5", ov.Type.f16),
        "p_lower": ("2..", ov.Type.boolean),
        "p_rank": ("...", ov.Type.i32),
        "p_scalar": ("", ov.Type.u8),
        "p_mixed": ("1..10,?,4,2..,..5", ov.Type.f32),
    }
    params, results = [], []
    for name, (shape, t) in shapes.items():
        p = ops.parameter(ov.PartialShape(shape), t, name=name)
        p.output(0).get_tensor().set_names({name})
        params.append(p)
        results.append(ops.result(ops.abs(p) if t != ov.Type.boolean else ops.logical_not(p)))
    # Escaped commas in tensor names and a layout rt_info on a port.
    params[0].output(0).get_tensor().set_names({"p_static", "alias,with,comma"})
    params[0].set_layout(ov.Layout("NC"))
    # A weight: stored as f16 Const + Convert when compressed.
    w = ops.constant(np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
    results.append(ops.result(ops.add(params[0], w)))
    for i, r in enumerate(results):
        r.output(0).get_tensor().set_names({f"out{i}"})
    model = ov.Model(results, params, f"forms_v{version}")
    model.set_rt_info("NCHW", ["model_info", "layout"])
    write_case(f"forms_v{version}", model, version=version, compress=(version == 11))


if __name__ == "__main__":
    os.makedirs(ROOT, exist_ok=True)
    element_types()
    forms(11)
    forms(10)
    sys.exit(0)
