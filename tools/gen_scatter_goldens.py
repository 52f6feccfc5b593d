#!/usr/bin/env python3
"""Writes the scatter golden suite into models/scatter/<case>/.

Each case: model.xml + model.bin (written by OpenVINO's own serializer), inputs.npz,
expected.npz (key "out") and case.json. Expected values come from the independent reference
below, a direct transcription of the scatter semantics of docs/semantics.md (section 1) (sequential loops in row-major
order, f16/bf16 accumulated in f32 and rounded once, integers wrapping in their type, floor for
integer mean, the per-op NaN rules). Each case is also run on OpenVINO CPU
(INFERENCE_PRECISION_HINT=f32) and the agreement is recorded in case.json ("openvino": "agrees",
"differs: ...", or "skipped: <why>"): docs/semantics.md (section 6) lists where CPU is
not a valid oracle, and those cases are not run there.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install openvino numpy
    /tmp/venv/bin/python tools/gen_scatter_goldens.py models/scatter

Must-fail cases carry "expect_error" in case.json and no expected.npz.
"""

import itertools
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset3 as ops3
import openvino.opset4 as ops4
import openvino.opset15 as ops15

import bf16

# ---------------------------------------------------------------------------------------------
# Element types: name -> (numpy storage dtype, kind). bf16 is stored as its uint16 bit pattern.

TYPES = {
    "f32": (np.float32, "float"),
    "f16": (np.float16, "float"),
    "bf16": (np.uint16, "bf16"),
    "f64": (np.float64, "float"),
    "i8": (np.int8, "int"),
    "i16": (np.int16, "int"),
    "i32": (np.int32, "int"),
    "i64": (np.int64, "int"),
    "u8": (np.uint8, "int"),
    "u16": (np.uint16, "int"),
    "u32": (np.uint32, "int"),
    "u64": (np.uint64, "int"),
    "boolean": (np.bool_, "bool"),
}
OV_TYPES = {
    "f32": ov.Type.f32, "f16": ov.Type.f16, "bf16": ov.Type.bf16, "f64": ov.Type.f64,
    "i8": ov.Type.i8, "i16": ov.Type.i16, "i32": ov.Type.i32, "i64": ov.Type.i64,
    "u8": ov.Type.u8, "u16": ov.Type.u16, "u32": ov.Type.u32, "u64": ov.Type.u64,
    "boolean": ov.Type.boolean,
}
INDEX_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


def int_info(ty):
    i = np.iinfo(TYPES[ty][0])
    return int(i.min), int(i.max)


def wrap(ty, v):
    lo, hi = int_info(ty)
    return (v - lo) % (hi - lo + 1) + lo


# ---------------------------------------------------------------------------------------------
# The reference. Values are handled as Python scalars in a "compute domain": np.float32 for
# f32/f16/bf16 (the f32 accumulator of docs/semantics.md), np.float64 for f64, Python int (wrapped to
# the type after every step) for integers, bool for boolean.


def to_domain(ty, arr):
    kind = TYPES[ty][1]
    flat = np.asarray(arr).reshape(-1)
    if kind == "bf16":
        return [np.float32(x) for x in bf16.to_f32(flat)]
    if ty in ("f32", "f16"):
        return [np.float32(x) for x in flat.astype(np.float32)]
    if ty == "f64":
        return [np.float64(x) for x in flat]
    if kind == "bool":
        return [bool(x) for x in flat]
    return [int(x) for x in flat]


def from_domain(ty, vals, shape):
    kind = TYPES[ty][1]
    if kind == "bf16":
        return bf16.from_f32(np.array(vals, dtype=np.float32)).reshape(shape)
    if kind == "int":
        return np.array(vals, dtype=object).astype(TYPES[ty][0]).reshape(shape)
    return np.array(vals, dtype=TYPES[ty][0]).reshape(shape)


def neutral(ty, red):
    kind = TYPES[ty][1]
    if kind == "bool":
        return {"sum": False, "mean": False, "prod": True, "max": False, "min": True}[red]
    if kind == "int":
        lo, hi = int_info(ty)
        return {"sum": 0, "mean": 0, "prod": 1, "max": lo, "min": hi}[red]
    f = np.float64 if ty == "f64" else np.float32
    return {"sum": f(0), "mean": f(0), "prod": f(1), "max": f(np.finfo(f).min), "min": f(np.finfo(f).max)}[red]


def combine(ty, red, acc, u, nd):
    kind = TYPES[ty][1]
    if red == "none":
        return u
    if kind == "bool":
        return {"sum": acc or u, "sub": acc != u, "prod": acc and u, "max": acc or u, "min": acc and u}[red]
    if red == "max":
        if nd:
            return u if acc < u else acc
        return acc if acc > u else u
    if red == "min":
        if nd:
            return u if u < acc else acc
        return acc if acc < u else u
    if kind == "int":
        r = {"sum": acc + u, "mean": acc + u, "sub": acc - u, "prod": acc * u}[red]
        return wrap(ty, r)
    with np.errstate(all="ignore"):
        return {"sum": acc + u, "mean": acc + u, "sub": acc - u, "prod": acc * u}[red]


class IndexError_(Exception):
    pass


def ref_scatter_update(ty, data, idx, upd, axis):
    d = list(data.shape)
    axis = axis + len(d) if axis < 0 else axis
    out = to_domain(ty, data)
    u = to_domain(ty, upd)
    idx_flat = [int(x) for x in np.asarray(idx).reshape(-1)]
    outer = math.prod(d[:axis])
    inner = math.prod(d[axis + 1:])
    k = len(idx_flat)
    for o in range(outer):
        for j, t in enumerate(idx_flat):
            if t < 0 or t >= d[axis]:
                raise IndexError_(j)
            for i in range(inner):
                out[(o * d[axis] + t) * inner + i] = u[(o * k + j) * inner + i]
    return from_domain(ty, out, d)


def ref_scatter_elements(ty, data, idx, upd, axis, red, init):
    d = list(data.shape)
    s = list(idx.shape)
    r = len(d)
    axis = axis + r if axis < 0 else axis
    out = to_domain(ty, data)
    u = to_domain(ty, upd)
    counts = {}
    strides = [math.prod(d[j + 1:]) for j in range(r)]
    for p, coord in enumerate(itertools.product(*[range(x) for x in s])):
        v = int(np.asarray(idx).reshape(-1)[p])
        t = v + d[axis] if v < 0 else v
        if t < 0 or t >= d[axis]:
            raise IndexError_(p)
        c = list(coord)
        c[axis] = t
        off = sum(ci * st for ci, st in zip(c, strides))
        if red == "none":
            out[off] = u[p]
            continue
        n = counts.get(off, 0)
        acc = out[off]
        if n == 0 and not init:
            acc = neutral(ty, red)
        counts[off] = n + 1
        out[off] = combine(ty, red, acc, u[p], nd=False)
    if red == "mean":
        for off, n in counts.items():
            n += 1 if init else 0
            if TYPES[ty][1] == "int":
                out[off] = out[off] // n  # floor
            else:
                out[off] = out[off] / type(out[off])(n)
    return from_domain(ty, out, d)


def ref_scatter_nd(ty, data, idx, upd, red):
    d = list(data.shape)
    q = list(idx.shape)
    k = q[-1]
    out = to_domain(ty, data)
    u = to_domain(ty, upd)
    sl = math.prod(d[k:])
    strides = [math.prod(d[j + 1:]) for j in range(len(d))]
    flat = [int(x) for x in np.asarray(idx).reshape(-1)]
    for t in range(math.prod(q[:-1])):
        off = 0
        for j in range(k):
            v = flat[t * k + j]
            c = v + d[j] if v < 0 else v
            if c < 0 or c >= d[j]:
                raise IndexError_(t * k + j)
            off += c * strides[j]
        for e in range(sl):
            out[off + e] = combine(ty, red, out[off + e], u[t * sl + e], nd=True)
    return from_domain(ty, out, d)


# ---------------------------------------------------------------------------------------------
# Random inputs.


def values(rng, ty, shape, special=None):
    n = math.prod(shape)
    kind = TYPES[ty][1]
    if kind == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if kind == "int":
        lo, hi = int_info(ty)
        lo, hi = max(lo, -9), min(hi, 9)
        return rng.integers(lo, hi + 1, n, dtype=np.int64).astype(TYPES[ty][0]).reshape(shape)
    # Small integers and halves: exact in every float type, so type conversion adds no noise.
    v = (rng.integers(-16, 17, n) / 2.0).astype(np.float32)
    if special == "nan":
        v[rng.random(n) < 0.3] = np.nan
    if ty == "bf16":
        return bf16.from_f32(v).reshape(shape)
    return v.astype(TYPES[ty][0]).reshape(shape)


def index_values(rng, ity, shape, dim, negative):
    n = math.prod(shape)
    lo = -dim if negative and ity[0] == "i" else 0
    if dim == 0:
        return np.zeros(shape, dtype=TYPES[ity][0])
    return rng.integers(lo, dim, n, dtype=np.int64).astype(TYPES[ity][0]).reshape(shape)


def random_shape(rng, rank, lo=1, hi=4):
    return [int(x) for x in rng.integers(lo, hi + 1, rank)]


# ---------------------------------------------------------------------------------------------
# Models.


def param(name, ty, shape):
    p = ops3.parameter(shape, OV_TYPES[ty], name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def const_axis(axis, ity="i64"):
    return ops3.constant(np.array(axis, dtype=TYPES[ity][0]))


def build(case):
    """The OpenVINO model of a case; inputs named data/indices/updates/axis, output `out`."""
    op, ty, ity = case["op"], case["type"], case["index_type"]
    arrays = case["inputs"]
    params = []

    def inp(name, t, const):
        arr = arrays[name]
        if const:
            if t == "bf16":
                c = ov.op.Constant(ov.Type.bf16, ov.Shape(list(arr.shape)), arr.view(np.uint16).reshape(-1).tolist())
                return c
            return ops3.constant(arr)
        p = param(name, t, list(arr.shape))
        params.append(p)
        return p

    data = inp("data", ty, False)
    indices = inp("indices", ity, case.get("const_indices", False))
    updates = inp("updates", ty, case.get("const_updates", False))
    if op in ("su3", "seu3", "seu12"):
        if case["axis_input"] == "param":
            axis = inp("axis", case["axis_type"], False)
        else:
            axis = const_axis(case["axis"], case["axis_type"])
    if op == "su3":
        node = ops3.scatter_update(data, indices, updates, axis)
    elif op == "seu3":
        node = ops3.scatter_elements_update(data, indices, updates, axis)
    elif op == "seu12":
        node = ops15.scatter_elements_update(data, indices, updates, axis, case["reduction"], case["use_init_val"])
    elif op == "snd3":
        node = ops4.scatter_nd_update(data, indices, updates)
    else:
        node = ops15.scatter_nd_update(data, indices, updates, case["reduction"])
    node.output(0).get_tensor().set_names({"out"})
    res = ops3.result(node)
    return ov.Model([res], params, case["name"])


def reference(case):
    a = case["inputs"]
    op, ty = case["op"], case["type"]
    if op == "su3":
        return ref_scatter_update(ty, a["data"], a["indices"], a["updates"], case["axis"])
    if op in ("seu3", "seu12"):
        return ref_scatter_elements(ty, a["data"], a["indices"], a["updates"], case["axis"],
                                    case.get("reduction", "none"), case.get("use_init_val", True))
    return ref_scatter_nd(ty, a["data"], a["indices"], a["updates"], case.get("reduction", "none"))


def openvino_unreliable(case):
    """Why OpenVINO CPU is not a valid oracle for this case (docs/semantics.md, section 6):
    (reason, run_anyway). Cases it cannot run or runs non-deterministically are not run; the
    others are, and a difference is recorded as expected."""
    op, ty, red = case["op"], case["type"], case.get("reduction", "none")
    a = case["inputs"]
    idx = np.asarray(a["indices"])
    if op == "su3" and idx.ndim == 0:
        return "CPU rejects 0-D indices", False
    if op == "su3" and len(np.unique(idx)) != idx.size:
        return "CPU ScatterUpdate with duplicate indices is non-deterministic", False
    if op in ("snd3", "snd15") and red == "none" and idx.shape[-1] > 0:
        d = a["data"].shape
        k = idx.shape[-1]
        norm = [tuple(int(c) + d[j] if int(c) < 0 else int(c) for j, c in enumerate(t)) for t in idx.reshape(-1, k)]
        if len(set(norm)) != len(norm):
            return "CPU ScatterNDUpdate(none) with duplicates is non-deterministic", False
    if op != "su3" and ty in ("boolean", "f64", "i16", "u16", "u32", "u64") and red != "none":
        return f"CPU executes {ty} as f32", True
    big = any((np.abs(np.asarray(a[k]).astype(np.float64)) > 2**31).any() for k in ("data", "updates"))
    if ty == "i64" and big or (
            op != "su3" and ty == "i64" and red in ("sum", "sub", "prod", "mean")):
        return "CPU lowers i64 to i32", True
    if ty == "bf16" and red in ("sum", "sub", "prod", "mean"):
        return "CPU rounds to bf16 between a reduction's steps (reference: in f32, rounded once)", True
    if red == "mean" and TYPES[ty][1] == "int":
        return "CPU truncates integer mean (the reference and irun floor)", True
    if case.get("special") == "nan":
        return "NaN rules: CPU differs from the reference for ScatterElementsUpdate", True
    if op in ("snd3", "snd15") and idx.shape[-1] == 0:
        return "CPU does nothing for k = 0", True
    if any(x == 0 for arr in a.values() for x in np.shape(arr)):
        return "empty tensors", True
    return None, True


def run_openvino(core, model, case):
    """OpenVINO CPU's output for the case's inputs; bf16 goes in and comes out as bit patterns
    (numpy has no bf16 type: they are copied into bf16 tensors, and out of the output's)."""
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    feeds = {}
    for p in model.get_parameters():
        name = p.get_friendly_name()
        feeds[name] = case["inputs"][name]
        if p.get_element_type() == ov.Type.bf16:
            feeds[name] = bf16.openvino_tensor(feeds[name])
    r = compiled(feeds)
    if compiled.output(0).get_element_type() == ov.Type.bf16:
        return np.asarray(r[compiled.output(0)]).view(np.uint16)
    return np.asarray(r[compiled.output(0)])


def openvino_must_fail(core, model, case):
    try:
        run_openvino(core, model, case)
        return "differs: OpenVINO CPU did not fail"
    except Exception as e:  # noqa: BLE001 - OpenVINO raises RuntimeError subclasses
        return f"agrees: fails ({str(e).splitlines()[0][:120]})"


def same(a, b, tol):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if tol is None or a.dtype.kind not in "f":
        if a.dtype.kind == "f":
            return np.array_equal(a.view(f"u{a.itemsize}"), b.astype(a.dtype).view(f"u{a.itemsize}")) or np.array_equal(a, b, equal_nan=True)
        return np.array_equal(a, b.astype(a.dtype))
    return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


def tolerance(case):
    """Float sum/mean/prod/sub may differ from other implementations' order. irun and this
    reference both apply in row-major order, so the Rust test compares irun bit for bit; this
    tolerance (case.json `tolerance_other_orders`) is only what the OpenVINO cross-check
    allows, since OpenVINO CPU applies updates in another order."""
    if TYPES[case["type"]][1] in ("float", "bf16") and case.get("reduction", "none") in ("sum", "mean", "prod", "sub"):
        return 1e-5
    return None


def save_npz(path, arrays, types):
    out = {}
    for k, v in arrays.items():
        if types.get(k) == "bf16":
            v = np.asarray(v, dtype=np.uint16).view("V2")
        out[k] = np.asarray(v)
    np.savez_compressed(path, **out)


# ---------------------------------------------------------------------------------------------
# The case list.


def shapes_seu(rng, rank, axis, dup):
    d = random_shape(rng, rank, 1, 4)
    s = [int(rng.integers(1, x + 1)) for x in d]
    s[axis] = int(rng.integers(1, d[axis] + (3 if dup else 1) + 1))
    return d, s


def make_cases():
    rng = np.random.default_rng(20261121)
    cases = []
    data_types = list(TYPES)

    def add(**c):
        c.setdefault("index_type", "i64")
        c.setdefault("axis_type", "i64")
        c.setdefault("axis_input", "const")
        cases.append(c)

    # ScatterUpdate-3: every data type, every index type, ranks 1-5, 0-D indices, duplicates,
    # negative and parameter axes, empty indices.
    for n, ty in enumerate(data_types):
        ity = INDEX_TYPES[n % len(INDEX_TYPES)]
        rank = 1 + n % 5
        d = random_shape(rng, rank, 1, 4)
        axis = int(rng.integers(0, rank))
        q = random_shape(rng, 1 + n % 2, 1, 3)
        qn = math.prod(q)
        idx = rng.permutation(d[axis])[:qn] if qn <= d[axis] else rng.integers(0, d[axis], qn)
        idx = np.asarray(idx).reshape(q) if qn <= d[axis] else idx.reshape(q)
        u = d[:axis] + q + d[axis + 1:]
        add(name=f"su3_{ty}_{ity}_r{rank}", op="su3", type=ty, index_type=ity, axis=axis,
            inputs={"data": values(rng, ty, d), "indices": idx.astype(TYPES[ity][0]), "updates": values(rng, ty, u)})
    for rank in range(1, 6):
        d = random_shape(rng, rank, 1, 3)
        d[-1] = 1  # size-1 trailing dims: where OpenVINO's core reference goes wrong
        axis = 0
        add(name=f"su3_0d_index_r{rank}", op="su3", type="f32", axis=axis,
            inputs={"data": values(rng, "f32", d), "indices": np.array(d[0] - 1, dtype=np.int64),
                    "updates": values(rng, "f32", d[1:])})
    add(name="su3_spec_deviation_331", op="su3", type="f32", axis=0,
        inputs={"data": np.zeros((3, 3, 1), np.float32), "indices": np.array([[2, 0, 1]], np.int64),
                "updates": np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)})
    for ty in ("f32", "i32", "boolean"):
        d = [4, 3, 2]
        add(name=f"su3_duplicates_{ty}", op="su3", type=ty, axis=1,
            inputs={"data": values(rng, ty, d), "indices": np.array([2, 0, 2, 2, 0], np.int32),
                    "updates": values(rng, ty, [4, 5, 2])}, index_type="i32")
    add(name="su3_negative_axis_param", op="su3", type="f32", axis=-2, axis_input="param",
        inputs={"data": values(rng, "f32", [3, 4, 2]), "indices": np.array([3, 1], np.int64),
                "updates": values(rng, "f32", [3, 2, 2]), "axis": np.array(-2, np.int64)})
    add(name="su3_param_axis_i32", op="su3", type="i64", axis=1, axis_input="param", axis_type="i32",
        inputs={"data": values(rng, "i64", [2, 5]), "indices": np.array([4, 0], np.int64),
                "updates": values(rng, "i64", [2, 2]), "axis": np.array([1], np.int32)})
    add(name="su3_empty_indices", op="su3", type="f32", axis=0,
        inputs={"data": values(rng, "f32", [3, 2]), "indices": np.zeros((0,), np.int64),
                "updates": np.zeros((0, 2), np.float32)})
    add(name="su3_i64_beyond_2p31", op="su3", type="i64", axis=0,
        inputs={"data": np.array([1, 2, 3], np.int64), "indices": np.array([1], np.int64),
                "updates": np.array([(1 << 53) + 1], np.int64)})

    # ScatterElementsUpdate-3: types, negative indices, duplicates, axes, smaller indices.
    for n, ty in enumerate(data_types):
        ity = INDEX_TYPES[(n + 3) % len(INDEX_TYPES)]
        rank = 1 + (n + 2) % 5
        axis = int(rng.integers(-rank, rank))
        d, s = shapes_seu(rng, rank, axis % rank, dup=n % 2 == 0)
        add(name=f"seu3_{ty}_{ity}_r{rank}", op="seu3", type=ty, index_type=ity, axis=axis,
            inputs={"data": values(rng, ty, d), "indices": index_values(rng, ity, s, d[axis % rank], True),
                    "updates": values(rng, ty, s)})
    add(name="seu3_param_axis", op="seu3", type="f32", axis=1, axis_input="param",
        inputs={"data": values(rng, "f32", [3, 4]), "indices": np.array([[3, -1], [0, 0]], np.int64),
                "updates": values(rng, "f32", [2, 2]), "axis": np.array([1, 7], np.int64)})

    # ScatterElementsUpdate-12: every reduction x use_init_val x a spread of data types.
    reductions = ["none", "sum", "prod", "min", "max", "mean"]
    seu_types = ["f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8", "boolean", "u64", "i16"]
    k = 0
    for red in reductions:
        for init in (True, False):
            for ty in seu_types[: 7] + [seu_types[7 + (k % 4)]]:
                k += 1
                if ty == "boolean" and red == "mean":
                    ty = "u32"
                ity = INDEX_TYPES[k % len(INDEX_TYPES)]
                rank = 1 + k % 5
                axis = int(rng.integers(0, rank))
                d, s = shapes_seu(rng, rank, axis, dup=True)
                add(name=f"seu12_{red}_{'init' if init else 'noinit'}_{ty}_{ity}_r{rank}", op="seu12", type=ty,
                    index_type=ity, axis=axis, reduction=red, use_init_val=init,
                    inputs={"data": values(rng, ty, d), "indices": index_values(rng, ity, s, d[axis], True),
                            "updates": values(rng, ty, s)})
    for red in ("max", "min"):
        for init in (True, False):
            d = [6, 3]
            add(name=f"seu12_nan_{red}_{'init' if init else 'noinit'}", op="seu12", type="f32", axis=0,
                reduction=red, use_init_val=init, special="nan",
                inputs={"data": values(rng, "f32", d, "nan"), "indices": index_values(rng, "i64", [9, 3], 6, True),
                        "updates": values(rng, "f32", [9, 3], "nan")})
    add(name="seu12_f16_accumulates_in_f32", op="seu12", type="f16", axis=0, reduction="sum", use_init_val=True,
        inputs={"data": np.array([2048, 1], np.float16), "indices": np.zeros(8, np.int64),
                "updates": np.ones(8, np.float16)})
    add(name="seu12_i8_sum_wraps", op="seu12", type="i8", axis=0, reduction="sum", use_init_val=True,
        inputs={"data": np.array([100, 0], np.int8), "indices": np.zeros(2, np.int64),
                "updates": np.array([100, 100], np.int8)})
    add(name="seu12_i64_sum_exact", op="seu12", type="i64", axis=0, reduction="sum", use_init_val=True,
        inputs={"data": np.array([(1 << 53) + 1, 5], np.int64), "indices": np.array([0, 0, 1], np.int64),
                "updates": np.array([2, (1 << 40), -7], np.int64)})
    add(name="seu12_mean_floor_negative", op="seu12", type="i32", axis=0, reduction="mean", use_init_val=False,
        inputs={"data": np.array([0, 0, 0, 10], np.int32), "indices": np.array([0, 0, 1, 1, 2, 2, 2], np.int64),
                "updates": np.array([-1, -2, 1, 2, -5, -5, -6], np.int32)})
    add(name="seu12_param_axis_negative", op="seu12", type="f32", axis=-1, axis_input="param", reduction="sum",
        use_init_val=False,
        inputs={"data": values(rng, "f32", [2, 3, 4]), "indices": index_values(rng, "i64", [2, 2, 6], 4, True),
                "updates": values(rng, "f32", [2, 2, 6]), "axis": np.array(-1, np.int64)})
    add(name="seu12_empty_indices", op="seu12", type="f32", axis=0, reduction="prod", use_init_val=False,
        inputs={"data": values(rng, "f32", [3, 2]), "indices": np.zeros((0, 2), np.int64),
                "updates": np.zeros((0, 2), np.float32)})
    add(name="seu12_const_indices_updates", op="seu12", type="f32", axis=1, reduction="max", use_init_val=True,
        const_indices=True, const_updates=True,
        inputs={"data": values(rng, "f32", [3, 5]), "indices": index_values(rng, "i32", [2, 7], 5, True),
                "updates": values(rng, "f32", [2, 7])}, index_type="i32")

    # ScatterNDUpdate-3 and -15.
    def nd_shapes(rank, k, qrank):
        d = random_shape(rng, rank, 1, 4)
        q = random_shape(rng, qrank - 1, 1, 4) + [k]
        u = q[:-1] + d[k:]
        return d, q, u

    def nd_indices(ity, q, d, negative):
        k = q[-1]
        arr = np.zeros(q, np.int64)
        flat = arr.reshape(-1, k) if k else arr.reshape(-1, 0)
        for j in range(k):
            lo = -d[j] if negative else 0
            flat[:, j] = rng.integers(lo, d[j], flat.shape[0])
        return flat.reshape(q).astype(TYPES[ity][0])

    for n, ty in enumerate(data_types):
        rank = 1 + n % 4
        k = 1 + n % rank
        d, q, u = nd_shapes(rank, k, 1 + n % 3)
        ity = ["i32", "i64"][n % 2]
        add(name=f"snd3_{ty}_{ity}_r{rank}_k{k}", op="snd3", type=ty, index_type=ity,
            inputs={"data": values(rng, ty, d), "indices": nd_indices(ity, q, d, True), "updates": values(rng, ty, u)})
    add(name="snd3_k0_whole_tensor", op="snd3", type="f32",
        inputs={"data": values(rng, "f32", [2, 2]), "indices": np.zeros((2, 0), np.int64),
                "updates": values(rng, "f32", [2, 2, 2])})
    add(name="snd3_scalar_update", op="snd3", type="i32",
        inputs={"data": values(rng, "i32", [4, 5]), "indices": np.array([3, -1], np.int64),
                "updates": np.array(42, np.int32)})
    nd_reductions = ["none", "sum", "sub", "prod", "min", "max"]
    nd_types = ["f32", "f16", "i32", "i64", "bf16", "boolean", "u8", "f64", "i16", "u32"]
    k_ = 0
    for red in nd_reductions:
        for ty in nd_types:
            k_ += 1
            rank = 1 + k_ % 4
            k = 1 + k_ % rank
            d, q, u = nd_shapes(rank, k, 1 + k_ % 3)
            if len(q) > 1:
                q[0] = q[0] + 2  # more tuples: duplicates
            u = q[:-1] + d[k:]
            ity = ["i32", "i64"][k_ % 2]
            add(name=f"snd15_{red}_{ty}_{ity}_r{rank}_k{k}", op="snd15", type=ty, index_type=ity, reduction=red,
                inputs={"data": values(rng, ty, d), "indices": nd_indices(ity, q, d, True), "updates": values(rng, ty, u)})
    for red in ("max", "min"):
        add(name=f"snd15_nan_{red}", op="snd15", type="f32", reduction=red, special="nan",
            inputs={"data": values(rng, "f32", [5, 2], "nan"), "indices": nd_indices("i64", [8, 1], [5, 2], True),
                    "updates": values(rng, "f32", [8, 2], "nan")})
    add(name="snd15_const_indices", op="snd15", type="f32", reduction="sum", const_indices=True, const_updates=True,
        inputs={"data": values(rng, "f32", [4, 3]), "indices": np.array([[0], [2], [-4], [0]], np.int64),
                "updates": values(rng, "f32", [4, 3])})

    # Over a million elements: the parallel paths (split by outer rows, inner columns, targets).
    big = 1 << 20
    add(name="big_seu12_sum_1d_histogram", op="seu12", type="f32", axis=0, reduction="sum", use_init_val=True,
        index_type="i32",
        inputs={"data": np.zeros(4096, np.float32), "indices": rng.integers(-4096, 4096, big).astype(np.int32),
                "updates": rng.integers(0, 4, big).astype(np.float32)})
    add(name="big_seu12_mean_columns", op="seu12", type="f32", axis=0, reduction="mean", use_init_val=False,
        index_type="i32",
        inputs={"data": np.zeros((64, 512), np.float32), "indices": rng.integers(0, 64, (2048, 512)).astype(np.int32),
                "updates": rng.integers(-4, 5, (2048, 512)).astype(np.float32)})
    add(name="big_seu12_max_rows_i32", op="seu12", type="i32", axis=1, reduction="max", use_init_val=False,
        index_type="i32",
        inputs={"data": np.zeros((1024, 64), np.int32), "indices": rng.integers(0, 64, (1024, 1024)).astype(np.int32),
                "updates": rng.integers(-100, 100, (1024, 1024)).astype(np.int32)})
    add(name="big_snd15_sum_rows", op="snd15", type="f32", reduction="sum", index_type="i32",
        inputs={"data": np.zeros((4096, 64), np.float32), "indices": rng.integers(-4096, 4096, (16384, 1)).astype(np.int32),
                "updates": rng.integers(0, 3, (16384, 64)).astype(np.float32)})
    add(name="big_su3_rows", op="su3", type="f32", axis=0,
        inputs={"data": np.zeros((8192, 128), np.float32), "indices": rng.permutation(8192)[:4096].astype(np.int64),
                "updates": rng.integers(0, 9, (4096, 128)).astype(np.float32)})

    # Constant indices of 2^18 or more: irun prepares them when it compiles (elements_plan.rs).
    plan = 1 << 18
    add(name="big_seu12_sum_1d_const", op="seu12", type="f32", axis=0, reduction="sum", use_init_val=True,
        index_type="i32", const_indices=True, const_updates=True,
        inputs={"data": rng.integers(-8, 8, 1 << 16).astype(np.float32),
                "indices": rng.integers(-(1 << 16), 1 << 16, plan).astype(np.int32),
                "updates": rng.integers(0, 4, plan).astype(np.float32)})
    add(name="big_seu12_mean_const_indices", op="seu12", type="f32", axis=0, reduction="mean", use_init_val=False,
        index_type="i32", const_indices=True,
        inputs={"data": np.zeros((64, 512), np.float32), "indices": rng.integers(-64, 64, (512, 512)).astype(np.int32),
                "updates": rng.integers(-4, 5, (512, 512)).astype(np.float32)})
    add(name="big_seu12_max_axis1_const", op="seu12", type="i32", axis=1, reduction="max", use_init_val=True,
        const_indices=True, const_updates=True,
        inputs={"data": rng.integers(-50, 50, (256, 300)).astype(np.int32), "indices": rng.integers(-300, 300, (256, 1024)),
                "updates": rng.integers(-100, 100, (256, 1024)).astype(np.int32)})

    # Must fail at run time: out-of-range indices.
    fails = [
        ("fail_su3_negative_index", dict(op="su3", type="f32", axis=0, inputs={
            "data": np.zeros((3, 2), np.float32), "indices": np.array([0, -1], np.int64),
            "updates": np.zeros((2, 2), np.float32)}), "index -1 at position [1] of input 1 (indices) is out of range [0, 2]"),
        ("fail_su3_too_large", dict(op="su3", type="i32", axis=1, inputs={
            "data": np.zeros((2, 3), np.int32), "indices": np.array([[0, 3]], np.int32),
            "updates": np.zeros((2, 1, 2), np.int32)}, index_type="i32"), "index 3 at position [0,1]"),
        ("fail_seu3_below_minus_dim", dict(op="seu3", type="f32", axis=0, inputs={
            "data": np.zeros((2, 2), np.float32), "indices": np.array([[0, 1], [-3, 0]], np.int64),
            "updates": np.zeros((2, 2), np.float32)}), "index -3 at position [1,0] of input 1 (indices) is out of range [-2, 1]"),
        ("fail_seu12_too_large_u8", dict(op="seu12", type="f32", axis=1, reduction="sum", use_init_val=True, inputs={
            "data": np.zeros((2, 4), np.float32), "indices": np.array([[0, 4]], np.uint8),
            "updates": np.zeros((1, 2), np.float32)}, index_type="u8"), "index 4 at position [0,1]"),
        ("fail_snd3_coordinate", dict(op="snd3", type="f32", inputs={
            "data": np.zeros((2, 3), np.float32), "indices": np.array([[1, 3]], np.int64),
            "updates": np.zeros((1,), np.float32)}), "index 3 at position [0,1]"),
        ("fail_snd15_negative", dict(op="snd15", type="i32", reduction="sum", inputs={
            "data": np.zeros((4,), np.int32), "indices": np.array([[1], [-5]], np.int32),
            "updates": np.zeros((2,), np.int32)}, index_type="i32"), "index -5 at position [1,0]"),
    ]
    bad = (np.arange(plan) % 1000).astype(np.int16)
    bad[200_000] = 1000
    fails.append(("fail_seu12_const_indices", dict(op="seu12", type="f32", axis=0, reduction="sum", use_init_val=True,
                  index_type="i16", const_indices=True, inputs={
                      "data": np.zeros(1000, np.float32), "indices": bad, "updates": np.ones(plan, np.float32)}),
                  "index 1000 at position [200000] of input 1 (indices) is out of range [-1000, 999]"))
    for name, c, msg in fails:
        add(name=name, expect_error={"code": "E0601", "message": msg}, **c)
    return cases


def main():
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "models/scatter")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    core = ov.Core()
    stats = {"cases": 0, "agrees": 0, "differs": 0, "differs_expected": 0, "skipped": 0, "openvino_failed": 0}
    per_op = {}
    for case in make_cases():
        name = case["name"]
        d = out_dir / name
        d.mkdir()
        model = build(case)
        ov.save_model(model, str(d / "model.xml"), compress_to_fp16=False)
        types = {"data": case["type"], "updates": case["type"]}
        feeds = {p.get_friendly_name(): case["inputs"][p.get_friendly_name()] for p in model.get_parameters()}
        save_npz(d / "inputs.npz", feeds, types)
        meta = {k: v for k, v in case.items() if k != "inputs"}
        stats["cases"] += 1
        per_op[case["op"]] = per_op.get(case["op"], 0) + 1
        if "expect_error" in case:
            try:
                reference(case)
                raise SystemExit(f"{name}: the reference accepted a must-fail case")
            except IndexError_:
                pass
            if case["op"] in ("seu3", "seu12") and (np.asarray(case["inputs"]["indices"]).astype(np.int64) < -case["inputs"]["data"].shape[case["axis"]]).any():
                meta["openvino"] = "skipped: CPU writes out of bounds for ScatterElementsUpdate indices < -dim (heap corruption)"
            else:
                meta["openvino"] = openvino_must_fail(core, model, case)
            (d / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
            continue
        expected = reference(case)
        save_npz(d / "expected.npz", {"out": expected}, {"out": case["type"]})
        tol = tolerance(case)
        if tol is not None:
            meta["tolerance_other_orders"] = tol
        why, run_anyway = openvino_unreliable(case)
        if not run_anyway:
            meta["openvino"] = f"skipped: {why}"
            stats["skipped"] += 1
        else:
            try:
                got = run_openvino(core, model, case)
                if case["type"] == "bf16":
                    # Compared and reported as the values the bit patterns stand for.
                    got, expected = bf16.to_f32(got), bf16.to_f32(expected)
                if same(got, expected, tol):
                    meta["openvino"] = "agrees"
                    stats["agrees"] += 1
                else:
                    known = f" (expected: {why})" if why else ""
                    meta["openvino"] = f"differs{known}: CPU gave {got.reshape(-1)[:8].tolist()}, reference {np.asarray(expected).reshape(-1)[:8].tolist()}"
                    stats["differs_expected" if why else "differs"] += 1
            except Exception as e:  # noqa: BLE001
                meta["openvino"] = f"skipped: OpenVINO CPU failed: {str(e).splitlines()[0][:160]}"
                stats["openvino_failed"] += 1
        (d / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps({"stats": stats, "per_op": per_op}, indent=1))
    for c in sorted(out_dir.iterdir()):
        m = json.loads((c / "case.json").read_text())
        if m.get("openvino", "").startswith("differs") or "failed" in m.get("openvino", ""):
            print(f"{c.name}: {m['openvino']}")


if __name__ == "__main__":
    main()
