#!/usr/bin/env python3
"""Write scatter IRs with OpenVINO for `irun check`: valid ones covering all five op versions,
every reduction and use_init_val, static/dynamic/interval shapes, constant and parameter axes;
and mutated copies of each that must be rejected, with what the rejection must name.

    venv/bin/python tools/gen_scatter_check_cases.py OUT_DIR
    venv/bin/python tools/gen_scatter_check_cases.py OUT_DIR --run target/release/irun

OUT_DIR/<case>/model.xml (+ .bin); OUT_DIR/manifest.json lists every case with the expected
exit code and, for invalid ones, the diagnostic code and the layer that must be named.
Mutations (on the XML/bin OpenVINO wrote):
  updates_dim   an updates dim changed consistently (Parameter shape, its port, the scatter input)
  output_dim    the scatter's declared output <dim> contradicts the inferred one
  axis_range    the axis Const's value rewritten to rank + 3
  index_type    the indices element type changed to f32
"""
import copy
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import openvino as ov
from openvino import opset3, opset4, opset15

SHAPES = {"static": "4,5", "dynamic": "?,5", "interval": "2..6,5"}


def param(name, shape, t=ov.Type.f32):
    p = opset15.parameter(ov.PartialShape(shape), t, name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def const(name, value):
    c = opset15.constant(value)
    c.set_friendly_name(name)
    return c


def build_cases():
    """(name, model, mutations that apply) for every valid case."""
    cases = []
    for shape_kind, dshape in SHAPES.items():
        for axis_kind in ("const", "param"):
            # ScatterUpdate-3: updates = data[:axis] + indices + data[axis+1:]
            data = param("data", dshape)
            idx = const("indices", np.array([3, 1], dtype=np.int64))
            upd = param("updates", "2,5")
            axis = const("axis", np.array(0, dtype=np.int32)) if axis_kind == "const" else param("axis", "", ov.Type.i32)
            node = opset3.scatter_update(data, idx, upd, axis)
            node.set_friendly_name("scatter")
            params = [data, upd] + ([axis] if axis_kind == "param" else [])
            muts = ["output_dim", "index_type"] + (["updates_dim", "axis_range"] if axis_kind == "const" else [])
            cases.append((f"su3_{shape_kind}_{axis_kind}axis", ov.Model([node], params), muts))
            # ScatterElementsUpdate-3 and -12 (every reduction x use_init_val).
            variants = [("seu3", None, None)] + [
                (f"seu12_{r}_{'init' if u else 'noinit'}", r, u) for r, u in itertools.product(["none", "sum", "prod", "min", "max", "mean"], [True, False])
            ]
            for vname, red, use_init in variants:
                data = param("data", dshape)
                idx = const("indices", np.array([[1, 0, 2, 3, 0], [0, 1, 1, 3, 2]], dtype=np.int32))
                upd = param("updates", "2,5")
                axis = const("axis", np.array([0], dtype=np.int64)) if axis_kind == "const" else param("axis", "1", ov.Type.i64)
                if red is None:
                    node = opset3.scatter_elements_update(data, idx, upd, axis)
                else:
                    node = opset15.scatter_elements_update(data, idx, upd, axis, red, use_init)
                node.set_friendly_name("scatter")
                params = [data, upd] + ([axis] if axis_kind == "param" else [])
                muts = ["updates_dim", "output_dim", "index_type"] + (["axis_range"] if axis_kind == "const" else [])
                cases.append((f"{vname}_{shape_kind}_{axis_kind}axis", ov.Model([node], params), muts))
        # ScatterNDUpdate-3 (opset4) and -15 (every reduction); no axis.
        for vname, red in [("snd3", None)] + [(f"snd15_{r}", r) for r in ["none", "sum", "sub", "prod", "min", "max"]]:
            data = param("data", dshape)
            idx = const("indices", np.array([[0], [2], [-1]], dtype=np.int64))
            upd = param("updates", "3,5")
            node = opset4.scatter_nd_update(data, idx, upd) if red is None else opset15.scatter_nd_update(data, idx, upd, red)
            node.set_friendly_name("scatter")
            cases.append((f"{vname}_{shape_kind}", ov.Model([node], [data, upd]), ["updates_dim", "output_dim", "index_type"]))
    return cases


def layer_by_name(root, name):
    return next(l for l in root.iter("layer") if l.get("name") == name)


def consumer_port(root, layer_id):
    """(scatter layer, its input port) fed by layer `layer_id`."""
    for e in root.iter("edge"):
        if e.get("from-layer") == layer_id:
            dst = next(l for l in root.iter("layer") if l.get("id") == e.get("to-layer"))
            port = next(p for p in dst.find("input") if p.get("id") == e.get("to-port"))
            return dst, port
    raise KeyError(layer_id)


def mutate(src_dir, dst_dir, kind):
    """Applies mutation `kind`; returns (expected code, layer name that must be named)."""
    shutil.copytree(src_dir, dst_dir)
    xml = os.path.join(dst_dir, "model.xml")
    tree = ET.parse(xml)
    root = tree.getroot()
    scatter = layer_by_name(root, "scatter")
    if kind == "updates_dim":
        upd = layer_by_name(root, "updates")
        data = upd.find("data")
        dims = data.get("shape").split(",")
        dims[-1] = str(int(dims[-1]) + 2)
        data.set("shape", ",".join(dims))
        upd.find("output/port")[-1].text = dims[-1]
        _, port = consumer_port(root, upd.get("id"))
        port[-1].text = dims[-1]
        expected = ("E0503", "scatter")
    elif kind == "output_dim":
        port = scatter.find("output/port")
        port[-1].text = str(int(port[-1].text) + 1)
        expected = ("E0505", "scatter")
    elif kind == "axis_range":
        axis = layer_by_name(root, "axis").find("data")
        off, size, et = int(axis.get("offset")), int(axis.get("size")), axis.get("element_type")
        with open(os.path.join(dst_dir, "model.bin"), "r+b") as f:
            f.seek(off)
            f.write(struct.pack("<q" if et == "i64" else "<i", 5))
        expected = ("E0504", "scatter")
    elif kind == "index_type":
        idx = layer_by_name(root, "indices")
        idx.find("data").set("element_type", "f32")
        idx.find("output/port").set("precision", "FP32")
        _, port = consumer_port(root, idx.get("id"))
        port.set("precision", "FP32")
        expected = ("E0501", "scatter")
    tree.write(xml)
    return expected


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    manifest = []
    for name, model, muts in build_cases():
        d = os.path.join(out, name)
        os.makedirs(d)
        ov.save_model(model, os.path.join(d, "model.xml"), compress_to_fp16=False)
        ov.Core().read_model(os.path.join(d, "model.xml"))  # OpenVINO itself accepts it
        manifest.append({"case": name, "exit": 0})
        for kind in muts:
            m = f"{name}__{kind}"
            code, layer = mutate(d, os.path.join(out, m), kind)
            manifest.append({"case": m, "exit": 1, "code": code, "layer": layer})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=0)
    valid = sum(1 for m in manifest if m["exit"] == 0)
    print(f"wrote {valid} valid and {len(manifest) - valid} mutated cases into {out}")
    if "--run" in sys.argv:
        irun = sys.argv[sys.argv.index("--run") + 1]
        failures = 0
        for m in manifest:
            p = subprocess.run([irun, "check", "--json", os.path.join(out, m["case"], "model.xml")], capture_output=True, text=True)
            diags = json.loads(p.stdout) if p.stdout.strip() else []
            ok = p.returncode == m["exit"]
            if ok and m["exit"] == 1:
                ok = any(d["code"] == m["code"] and d.get("layer", {}).get("name") == m["layer"] and "port" in d for d in diags)
            if not ok:
                failures += 1
                print("FAIL", m, p.returncode, [(d["code"], d["message"][:120]) for d in diags if d["severity"] == "error"])
        print(f"irun check: {len(manifest) - failures}/{len(manifest)} as expected")


if __name__ == "__main__":
    main()
