#!/usr/bin/env python3
"""Writes the scatter benchmark workloads a-g of issue 4 as IR (not committed: up to 1.5 GB).

Each model has one Parameter, `data`; indices, updates and axis are Constants in the .bin, so
`irun bench` (seeded random data) and OpenVINO time exactly the same graph. irun prepares
constant indices when it compiles (Op::prepare); `c_input` is workload c with indices and
updates as model inputs instead (written with an inputs.npz both tools read), which times the
run-time path.

    /tmp/venv/bin/python tools/gen_bench_models.py tools/out/bench [a b ...]
"""

import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset3 as ops3
import openvino.opset15 as ops15

import bf16


def model(name, data_shape, data_type, build):
    data = ops3.parameter(data_shape, data_type, name="data")
    data.output(0).get_tensor().set_names({"data"})
    node = build(data)
    node.output(0).get_tensor().set_names({"out"})
    return ov.Model([ops3.result(node)], [data], name)


def model_with_inputs(name, data_shape, arrays, build, data_type=ov.Type.f32):
    """A model whose indices and updates are Parameters; returns (model, inputs for npz)."""
    data = ops3.parameter(data_shape, data_type, name="data")
    data.output(0).get_tensor().set_names({"data"})
    params = [data]
    for key, arr in arrays.items():
        ty = ov.Type.bf16 if arr.dtype == bf16.STORAGE else ov.Type(arr.dtype)
        p = ops3.parameter(list(arr.shape), ty, name=key)
        p.output(0).get_tensor().set_names({key})
        params.append(p)
    node = build(*params)
    node.output(0).get_tensor().set_names({"out"})
    return ov.Model([ops3.result(node)], params, name), arrays


def distribution(name, n, m, rng):
    """m index values in [0, n) drawn as `name`: the index distributions of issue 12."""
    if name == "uniform":
        return rng.integers(0, n, m)
    if name == "skewed":  # power law: floor(n * u^3), many duplicates among low targets
        return np.floor(n * rng.random(m) ** 3).astype(np.int64)
    if name == "equal":
        return np.full(m, n // 3, np.int64)
    if name == "sorted":
        return np.sort(rng.integers(0, n, m))
    if name == "reversed":
        return np.sort(rng.integers(0, n, m))[::-1].copy()
    if name == "hot":  # half the updates go to 8 hot targets, the rest are spread out
        hot = rng.integers(0, n, 8)
        v = rng.integers(0, n, m)
        pick = rng.random(m) < 0.5
        v[pick] = hot[rng.integers(0, 8, int(pick.sum()))]
        return v
    raise ValueError(name)


DISTRIBUTIONS = ["uniform", "skewed", "equal", "sorted", "reversed", "hot"]


def reduction_workloads():
    """Issue 12's reductions with indices and updates as inputs, for each distribution:
    sum_<d>: SEU-12 sum, f32 [1M] <- 16M i64 indices; max_<d>: SEU-12 max, i32 [8M] <- 8M i32
    indices; mean_<d>: SEU-12 mean, use_init_val=false, f32 [4096,512] <- i64 [65536,512],
    axis 0 (the distribution over rows); ndsum_<d>: SND-15 sum, f32 [1M,16] <- 1M rows."""
    c = ops3.constant
    out = {}
    for d in DISTRIBUTIONS:
        def sum_(d=d):
            rng = np.random.default_rng(21)
            return model_with_inputs(f"sum_{d}", [1_000_000], {
                "indices": distribution(d, 1_000_000, 16_000_000, rng),
                "updates": rng.random(16_000_000, dtype=np.float32)},
                lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int64(0)), "sum"))

        def max_(d=d):
            rng = np.random.default_rng(22)
            return model_with_inputs(f"max_{d}", [8_000_000], {
                "indices": distribution(d, 8_000_000, 8_000_000, rng).astype(np.int32),
                "updates": rng.integers(-(1 << 30), 1 << 30, 8_000_000).astype(np.int32)},
                lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int32(0)), "max"),
                data_type=ov.Type.i32)

        def mean_(d=d):
            rng = np.random.default_rng(23)
            rows = distribution(d, 4096, 65536, rng)
            return model_with_inputs(f"mean_{d}", [4096, 512], {
                "indices": np.repeat(rows[:, None], 512, axis=1),
                "updates": rng.random((65536, 512), dtype=np.float32)},
                lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int64(0)), "mean", False))

        def ndsum_(d=d):
            rng = np.random.default_rng(24)
            return model_with_inputs(f"ndsum_{d}", [1_000_000, 16], {
                "indices": distribution(d, 1_000_000, 1_000_000, rng).reshape(-1, 1),
                "updates": rng.random((1_000_000, 16), dtype=np.float32)},
                lambda x, i, u: ops15.scatter_nd_update(x, i, u, "sum"))

        out[f"sum_{d}"], out[f"max_{d}"], out[f"mean_{d}"], out[f"ndsum_{d}"] = sum_, max_, mean_, ndsum_
    out.update(typed_workloads())
    return out


# Element types of the typed reductions: name suffix -> (numpy type, OpenVINO type); bf16
# arrays are stored as their bit patterns (tools/bf16.py).
TYPES = {"f16": (np.float16, ov.Type.f16), "bf16": (bf16.STORAGE, ov.Type.bf16),
         "f64": (np.float64, ov.Type.f64),
         "i64": (np.int64, ov.Type.i64), "f32": (np.float32, ov.Type.f32),
         "i32": (np.int32, ov.Type.i32)}


def typed_workloads():
    """Issue 12's "the same for integer, f16/bf16 and f64 data": sum_<d>_f16 and
    sum_<d>_bf16 on every distribution; on the uniform and skewed indices sum_<d>_<t>, the 1-D
    sum with f64 or i64 data and updates;
    max_<d>_f32, the 1-D max with f32 data, and ndsum_<d>_<f16|bf16|i32|i64|f64>, the
    ScatterNDUpdate sum with those data (sizes as sum_<d>, max_<d> and ndsum_<d>); and
    sum_<d>_i32_250k, an integer histogram on a small output (i32 [250K] <- 16M i64).
    (OpenVINO CPU does not run f64 scatters.)"""
    c = ops3.constant
    out = {}

    def values(rng, n, ty):
        if ty == bf16.STORAGE:
            return bf16.stored(rng.random(n, dtype=np.float32))
        if np.issubdtype(ty, np.floating):
            return rng.random(n).astype(ty)
        return rng.integers(-1000, 1000, n).astype(ty)

    for d in DISTRIBUTIONS:
        for t in ["f16", "bf16", "f64", "i64"] if d in ["uniform", "skewed"] else ["f16", "bf16"]:
            def sum_(d=d, t=t):
                rng = np.random.default_rng(25)
                ty, ovt = TYPES[t]
                return model_with_inputs(f"sum_{d}_{t}", [1_000_000], {
                    "indices": distribution(d, 1_000_000, 16_000_000, rng),
                    "updates": values(rng, 16_000_000, ty)},
                    lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int64(0)), "sum"),
                    data_type=ovt)
            out[f"sum_{d}_{t}"] = sum_

        def small_(d=d):
            rng = np.random.default_rng(27)
            return model_with_inputs(f"sum_{d}_i32_250k", [250_000], {
                "indices": distribution(d, 250_000, 16_000_000, rng),
                "updates": values(rng, 16_000_000, np.int32)},
                lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int64(0)), "sum"),
                data_type=ov.Type.i32)
        if d not in ["uniform", "skewed"]:
            continue

        def ndsum_(d=d):
            rng = np.random.default_rng(28)
            return model_with_inputs(f"ndsum_{d}_f16", [1_000_000, 16], {
                "indices": distribution(d, 1_000_000, 1_000_000, rng).reshape(-1, 1),
                "updates": rng.random((1_000_000, 16)).astype(np.float16)},
                lambda x, i, u: ops15.scatter_nd_update(x, i, u, "sum"),
                data_type=ov.Type.f16)
        out[f"ndsum_{d}_f16"] = ndsum_
        for t in ["bf16", "i32", "i64", "f64"]:
            def ndsum_typed(d=d, t=t):
                rng = np.random.default_rng(29)
                ty, ovt = TYPES[t]
                return model_with_inputs(f"ndsum_{d}_{t}", [1_000_000, 16], {
                    "indices": distribution(d, 1_000_000, 1_000_000, rng).reshape(-1, 1),
                    "updates": values(rng, 16_000_000, ty).reshape(1_000_000, 16)},
                    lambda x, i, u: ops15.scatter_nd_update(x, i, u, "sum"),
                    data_type=ovt)
            out[f"ndsum_{d}_{t}"] = ndsum_typed
        out[f"sum_{d}_i32_250k"] = small_

        def max_(d=d):
            rng = np.random.default_rng(26)
            return model_with_inputs(f"max_{d}_f32", [8_000_000], {
                "indices": distribution(d, 8_000_000, 8_000_000, rng).astype(np.int32),
                "updates": values(rng, 8_000_000, np.float32)},
                lambda x, i, u: ops15.scatter_elements_update(x, i, u, c(np.int32(0)), "max"))
        out[f"max_{d}_f32"] = max_
    return out


def workloads(rng):
    f32, i32 = ov.Type.f32, ov.Type.i32
    c = ops3.constant
    return {
        # a. The ScatterUpdate spec example.
        "a": lambda: model("a", [1000, 256, 10, 15], f32, lambda d: ops3.scatter_update(
            d, c(rng.integers(0, 256, (125, 20))),
            c(rng.random((1000, 125, 20, 10, 15), dtype=np.float32)), c(np.int64(1)))),
        # b. ScatterElementsUpdate-12 none, axis 0.
        "b": lambda: model("b", [1000, 256, 7, 7], f32, lambda d: ops15.scatter_elements_update(
            d, c(rng.integers(0, 1000, (125, 20, 7, 6))),
            c(rng.random((125, 20, 7, 6), dtype=np.float32)), c(np.int64(0)), "none")),
        # c. Histogram / scatter_add: 16M indices onto 1M elements.
        "c": lambda: model("c", [1_000_000], f32, lambda d: ops15.scatter_elements_update(
            d, c(rng.integers(0, 1_000_000, 16_000_000)),
            c(rng.random(16_000_000, dtype=np.float32)), c(np.int64(0)), "sum")),
        # d. GNN neighbour mean aggregation.
        "d": lambda: model("d", [4096, 512], f32, lambda d: ops15.scatter_elements_update(
            d, c(rng.integers(0, 4096, (65536, 512))),
            c(rng.random((65536, 512), dtype=np.float32)), c(np.int64(0)), "mean", False)),
        # e. PointPillars pseudo-image: 12000 unique rows.
        "e": lambda: model("e", [214272, 64], f32, lambda d: ops15.scatter_nd_update(
            d, c(rng.permutation(214272)[:12000].reshape(12000, 1).astype(np.int64)),
            c(rng.random((12000, 64), dtype=np.float32)), "none")),
        # f. KV-cache update: 16 positions along axis 2.
        "f": lambda: model("f", [1, 32, 4096, 128], f32, lambda d: ops3.scatter_update(
            d, c(np.arange(1000, 1016, dtype=np.int64)),
            c(rng.random((1, 32, 16, 128), dtype=np.float32)), c(np.int64(2)))),
        # g. Integer max over 8M random targets.
        "g": lambda: model("g", [8_000_000], i32, lambda d: ops15.scatter_elements_update(
            d, c(rng.integers(0, 8_000_000, 8_000_000).astype(np.int32)),
            c(rng.integers(-(1 << 30), 1 << 30, 8_000_000).astype(np.int32)), c(np.int32(0)), "max")),
        # c with indices and updates as model inputs: the run-time path, nothing prepared. Its
        # own generator, so that a-g stay as they were.
        "c_input": lambda: model_with_inputs("c_input", [1_000_000], {
            "indices": np.random.default_rng(5).integers(0, 1_000_000, 16_000_000),
            "updates": np.random.default_rng(6).random(16_000_000, dtype=np.float32)},
            lambda d, i, u: ops15.scatter_elements_update(d, i, u, c(np.int64(0)), "sum")),
        **reduction_workloads(),
    }


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tools/out/bench")
    only = sys.argv[2:]
    rng = np.random.default_rng(4)
    for name, make in workloads(rng).items():
        if only and name not in only:
            continue
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        m = make()
        if isinstance(m, tuple):
            m, inputs = m
        else:
            inputs = None
        ov.save_model(m, str(d / "model.xml"), compress_to_fp16=False)
        if inputs is not None:
            rng_data = np.random.default_rng(1)
            shape = list(m.inputs[0].get_shape())
            if m.inputs[0].get_element_type() == ov.Type.bf16:
                data = bf16.stored(rng_data.random(shape, dtype=np.float32))
            elif m.inputs[0].get_element_type().is_real():
                data = rng_data.random(shape).astype(m.inputs[0].get_element_type().to_dtype())
            else:
                data = rng_data.integers(-1000, 1000, shape).astype(m.inputs[0].get_element_type().to_dtype())
            np.savez(d / "inputs.npz", data=data, **inputs)
        print(f"{name}: {d / 'model.xml'} ({(d / 'model.bin').stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
