#!/usr/bin/env python3
"""Golden cases for whole models: inputs.npz and expected.npz next to each model.xml, the
expected values computed by OpenVINO CPU with INFERENCE_PRECISION_HINT=f32.

  models/converted/torch_*   the PyTorch models tools/convert_torch_models.py converted (GNN
                             aggregations, an index_copy_ KV cache): inputs drawn so that every
                             index is valid, as the models' users' data would be
  models/ops/<name>          small graphs built with OpenVINO's opset API that together use every
                             elementwise and data-movement op irun runs, with the shapes,
                             attributes and value ranges that exercise their rules (broadcasting,
                             negative steps and indices, batch_dims, special_zero, folding of
                             shape subgraphs); no NaN inputs, where irun follows torch/numpy and
                             OpenVINO CPU does not (those rules have unit tests instead)

The Rust test tests/model_goldens.rs runs every case at 1 and 2 threads and compares every
output: integers and booleans exactly, floats within 1e-4 relative + absolute.

    python3 -m venv /tmp/ov && /tmp/ov/bin/pip install openvino numpy
    /tmp/ov/bin/python tools/gen_model_goldens.py
"""
import json
import os
import sys

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset2 as o2
import openvino.opset3 as o3
import openvino.opset4 as o4
import openvino.opset5 as o5
import openvino.opset6 as o6
import openvino.opset7 as o7
import openvino.opset8 as o8
import openvino.opset9 as o9
import openvino.opset10 as o10
import openvino.opset11 as o11
import openvino.opset13 as o13
import openvino.opset14 as o14

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
rng = np.random.default_rng(20261122)


def param(name, dtype, shape):
    p = o1.parameter(shape, dtype, name=name)
    p.output(0).set_names({name})
    return p


def const(v, dtype=np.int64):
    return o1.constant(np.array(v, dtype=dtype))


def run_openvino(model, inputs):
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(inputs)
    outs = {}
    for i, out in enumerate(compiled.outputs):
        names = sorted(out.get_names())
        key = names[0] if names else f"output_{i}"
        outs[key] = np.asarray(result[out])
    return outs


def write(dirname, model, inputs, save_model=True, numpy_reference=None):
    """`numpy_reference`: {output key: (values, why)} for outputs where OpenVINO CPU departs
    from OpenVINO's own spec and reference (docs/semantics.md, section 6); those expected values
    come from numpy instead, and golden.json says which and why."""
    os.makedirs(dirname, exist_ok=True)
    xml = os.path.join(dirname, "model.xml")
    if save_model:
        ov.save_model(model, xml, compress_to_fp16=False)
    # Run the model as written to disk, as irun reads it.
    expected = run_openvino(ov.Core().read_model(xml), inputs)
    sources = {k: "openvino-cpu-f32" for k in expected}
    for key, (values, why) in (numpy_reference or {}).items():
        cpu = expected[key]
        assert cpu.shape == values.shape and cpu.dtype == values.dtype, key
        expected[key] = values
        sources[key] = f"numpy: {why}; OpenVINO CPU gives {cpu.ravel()[:8].tolist()}..."
    np.savez(os.path.join(dirname, "inputs.npz"), **inputs)
    np.savez(os.path.join(dirname, "expected.npz"), **expected)
    with open(os.path.join(dirname, "golden.json"), "w") as f:
        json.dump({"expected": sources}, f, indent=1, sort_keys=True)
    print("wrote", dirname, {k: v.shape for k, v in expected.items()})


def model(outputs, params, name):
    """A model whose results are `outputs`, each (tensor name, node or node output)."""
    res = []
    for tensor_name, node in outputs:
        out = node.output(0) if hasattr(node, "output") else node
        out.set_names({tensor_name})
        res.append(o1.result(out))
    return ov.Model(res, params, name)


def shape_ops():
    """torch's x.view(x.size(0), -1) and friends: a shape subgraph to fold, then arithmetic,
    activations, Transpose, Concat, Slice with a negative step, Squeeze/Unsqueeze."""
    x = param("x", np.float32, [2, 3, 4])
    shape = o3.shape_of(x, "i64")
    batch = o8.gather(shape, const([0]), const(0))
    flat = o1.reshape(x, o1.concat([batch, const([-1])], 0), False)
    scaled = o1.add(o1.multiply(flat, const(rng.standard_normal((1, 12)), np.float32)),
                    const(rng.standard_normal(12), np.float32))
    act = o1.tanh(o1.sigmoid(o1.relu(scaled)))
    t = o1.transpose(o1.reshape(act, const([2, 3, 4]), False), const([2, 0, 1]))
    cat = o1.concat([t, o1.negative(t)], -1)
    sl = o8.slice(cat, const([-1, 5]), const([np.iinfo(np.int64).min, 0]), const([-2, -2]), const([0, 2]))
    sq = o1.squeeze(o1.unsqueeze(sl, const([0, 3])), const([0]))
    zero = o1.reshape(x, const([0, -1]), True)
    return model([("flat", act), ("sliced", sq), ("special_zero", zero)], [x], "shape_ops"), {
        "x": rng.standard_normal((2, 3, 4)).astype(np.float32)}


def int_arith():
    """Integer arithmetic with numpy broadcasting: floor division (m_pythondiv), FloorMod and
    Mod signs, Power, Maximum/Minimum, comparisons, logical ops and Select."""
    a = param("a", np.int32, [3, 4])
    b = param("b", np.int32, [4])
    div = o1.divide(a, b)
    trunc = o1.divide(a, b)
    trunc.set_attribute("m_pythondiv", False)
    fmod = o1.floor_mod(a, b)
    mod = o1.mod(a, b)
    pw = o1.power(o1.clamp(a, -3, 3), o1.clamp(b, 0, 4))
    mx = o1.maximum(a, b)
    mn = o1.minimum(a, o1.subtract(b, const(1, np.int32)))
    gt = o1.greater(a, b)
    le = o1.less_equal(a, b)
    logic = o1.logical_xor(o1.logical_or(gt, o1.equal(a, b)), o1.logical_not(le))
    sel = o1.select(logic, mx, mn)
    sq = o1.squared_difference(a, b)
    outs = [("div", div), ("trunc", trunc), ("floor_mod", fmod), ("mod", mod), ("pow", pw),
            ("select", sel), ("not_equal", o1.not_equal(a, b)), ("ge", o1.greater_equal(a, b)),
            ("lt", o1.less(a, b)), ("and", o1.logical_and(o1.greater_equal(a, b), o1.less(a, const(10, np.int32)))), ("sqdiff", sq)]
    av = rng.integers(-20, 20, (3, 4)).astype(np.int32)
    bv = np.array([3, -4, 7, -2], dtype=np.int32)
    reference = {"div": (np.floor_divide(av, bv),
                         "Divide-1 with m_pythondiv=true floors (spec and reference); CPU truncates")}
    return model(outs, [a, b], "int_arith"), {"a": av, "b": bv}, reference


def activations():
    """Every float activation and unary math op, on values in their domains."""
    x = param("x", np.float32, [4, 8])
    pos = param("pos", np.float32, [4, 8])
    outs = [
        ("gelu_erf", o7.gelu(x, "erf")),
        ("gelu_tanh", o7.gelu(x, "tanh")),
        ("gelu2", o1.gelu(x) if hasattr(o1, "gelu") else o7.gelu(x, "erf")),
        ("swish", o4.swish(x, const(0.75, np.float32))),
        ("swish1", o4.swish(x)),
        ("hswish", o4.hswish(x)),
        ("hsigmoid", o5.hsigmoid(x)),
        ("elu", o1.elu(x, 0.5)),
        ("clamp", o1.clamp(x, -0.5, 1.25)),
        ("softplus", o4.softplus(x)),
        ("exp", o1.exp(x)),
        ("log", o1.log(pos)),
        ("sqrt", o1.sqrt(pos)),
        ("erf", o1.erf(x)),
        ("abs", o1.abs(x)),
        ("floor", o1.floor(x)),
        ("ceiling", o1.ceiling(x)),
        ("sin", o1.sin(x)),
        ("cos", o1.cos(x)),
        ("pow", o1.power(pos, x)),
        ("div", o1.divide(x, pos)),
        ("fmod", o1.floor_mod(x, const([0.7], np.float32))),
    ]
    xv = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    pv = rng.uniform(0.1, 4.0, (4, 8)).astype(np.float32)
    return model(outs, [x, pos], "activations"), {"x": xv, "pos": pv}


def gather_split_tile():
    """Gather-8 with batch_dims and negative indices, Split, VariadicSplit with -1, Tile,
    Broadcast-3 in all three modes, Broadcast-1, Gather-1/7, bool and i64 data."""
    d = param("d", np.float32, [2, 5, 3])
    idx = param("idx", np.int64, [2, 4])
    flags = param("flags", np.bool_, [5])
    g = o8.gather(d, idx, const(1), batch_dims=1)
    g7 = o7.gather(d, const([[0, 2], [1, 1]]), const(-1))
    g1 = o1.gather(flags, const([4, 0, 2]), const(0))
    parts = o1.split(d, const(1), 5)
    var = o1.variadic_split(d, const(-1), const([1, -1]))
    tile = o1.tile(var.output(0), const([2, 1, 1, 2]))
    bn = o3.broadcast(const([[1.0], [2.0]], np.float32), const([3, 2, 4]))
    bb = o3.broadcast(d, const([2, 1, 1, 1]), broadcast_spec="BIDIRECTIONAL")
    be = o3.broadcast(const([1, 2, 3], np.int64), const([2, 3, 2]), const([1]), "EXPLICIT")
    b1 = o1.broadcast(flags, const([2, 5]))
    outs = [("gather_b", g), ("gather7", g7), ("gather1", g1), ("split3", parts.output(3)),
            ("var1", var.output(1)), ("tile", tile), ("bnumpy", bn), ("bbidi", bb), ("bexplicit", be),
            ("b1", b1)]
    return model(outs, [d, idx, flags], "gather_split_tile"), {
        "d": rng.standard_normal((2, 5, 3)).astype(np.float32),
        "idx": np.array([[0, -1, 4, 2], [-5, 3, 3, 1]], dtype=np.int64),
        "flags": np.array([True, False, True, True, False]),
    }


def reduce_norm():
    """Every reduction (over one axis, non-adjacent axes, with and without keep_dims), SoftMax-1
    and -8, LogSoftmax, MVN-6 as LayerNorm (both eps modes) and MVN-1 across channels."""
    x = param("x", np.float32, [2, 3, 4])
    i = param("i", np.int32, [2, 3, 4])
    outs = [
        ("sum", o1.reduce_sum(x, const([1]), False)),
        ("mean", o1.reduce_mean(x, const([0, 2]), True)),
        ("max", o1.reduce_max(x, const([-1]), False)),
        ("min", o1.reduce_min(x, const([0, 2]), False)),
        ("prod", o1.reduce_prod(x, const([2]), True)),
        ("l1", o4.reduce_l1(x, const([1, 2]), False)),
        ("l2", o4.reduce_l2(x, const([0]), False)),
        ("isum", o1.reduce_sum(i, const([0, 1, 2]), False)),
        ("imean", o1.reduce_mean(i, const([2]), False)),
        ("imax", o1.reduce_max(i, const([1]), True)),
        ("softmax8", o8.softmax(x, -1)),
        ("softmax1", o1.softmax(x, 1)),
        ("logsoftmax", o5.log_softmax(x, 1)),
        ("layernorm", o6.mvn(x, const([-1]), True, 1e-5, "inside_sqrt")),
        ("mvn_outside", o6.mvn(x, const([1, 2]), True, 1e-3, "outside_sqrt")),
        ("mvn1", o2.mvn(x, across_channels=True, normalize_variance=True, eps=1e-6)),
    ]
    return model(outs, [x, i], "reduce_norm"), {
        "x": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "i": rng.integers(-9, 9, (2, 3, 4)).astype(np.int32),
    }


def small_cnn():
    """A ResNet/MobileNet-shaped stack: a 7x7 stride-2 stem, max pooling (v1, v8 with indices
    from axis 2, v14 with ceil_torch), a residual block, a depthwise GroupConvolution with
    same_upper padding, HSwish, average pooling (exclude-pad false, ceil), a global mean and a
    linear head with MatMul."""
    x = param("image", np.float32, [1, 3, 32, 32])

    def w(*shape):
        return const(rng.standard_normal(shape) * (2.0 / np.prod(shape[1:])) ** 0.5, np.float32)

    stem = o1.relu(o1.convolution(x, w(16, 3, 7, 7), [2, 2], [3, 3], [3, 3], [1, 1]))
    pooled = o1.max_pool(stem, [2, 2], [1, 1], [1, 1], [3, 3], "floor")
    a = o1.relu(o1.convolution(pooled, w(16, 16, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1]))
    b = o1.convolution(a, w(16, 16, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
    res = o1.relu(o1.add(b, pooled))
    dw = o1.group_convolution(res, w(16, 1, 1, 3, 3), [2, 2], [0, 0], [0, 0], [1, 1], "same_upper")
    act = o4.hswish(dw)
    avg = o1.avg_pool(act, [2, 2], [0, 0], [0, 0], [2, 2], True, "ceil")
    gap = o1.reduce_mean(act, const([2, 3]), False)
    logits = o1.add(o1.matmul(gap, w(16, 10), False, False), const(rng.standard_normal(10), np.float32))
    mp8 = o8.max_pool(res, [1, 1], [1, 1], [0, 0], [0, 0], [3, 3], "floor", "explicit", "i64", 2)
    mp14 = o14.max_pool(stem, [2, 2], [1, 1], [1, 1], [1, 1], [2, 2], "ceil_torch")
    outs = [("logits", logits), ("avg", avg), ("mp8", mp8.output(0)), ("mp8_idx", mp8.output(1)),
            ("mp14", mp14.output(0))]
    return model(outs, [x], "small_cnn"), {"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}


def index_ops():
    """GatherElements, OneHot (an out-of-range index gives an all-off row), NonZero (a
    data-dependent shape), TopK-11 max/min with sort by value and by index, Unique sorted and
    in first-occurrence order, and the embedding bags (offsets with weights and a default
    index, packed, v15 mean)."""
    x = param("x", np.float32, [3, 5])
    idx = param("idx", np.int64, [3, 2])
    labels = param("labels", np.int64, [4])
    table = param("table", np.float32, [6, 3])
    bag_idx = param("bag_idx", np.int32, [5])
    offsets = param("offsets", np.int32, [3])
    weights = param("weights", np.float32, [5])
    packed = param("packed", np.int64, [2, 3])
    o15 = __import__("openvino.opset15", fromlist=["x"])
    topk = o11.topk(x, const(3), 1, "max", "value", "i64")
    topk_min = o11.topk(x, const(2), 0, "min", "index", "i32")
    uniq = o10.unique(labels, sorted=True)
    uniq_first = o10.unique(labels, sorted=False)
    outs = [
        ("gather_elements", o6.gather_elements(x, idx, 1)),
        ("one_hot", o1.one_hot(labels, const(4), const(1.0, np.float32), const(-1.0, np.float32), -1)),
        ("non_zero", o3.non_zero(o1.greater(x, const(0.5, np.float32)), "i64")),
        ("topk_values", topk.output(0)), ("topk_indices", topk.output(1)),
        ("topk_min_values", topk_min.output(0)), ("topk_min_indices", topk_min.output(1)),
        ("unique", uniq.output(0)), ("unique_rev", uniq.output(2)), ("unique_counts", uniq.output(3)),
        ("unique_first", uniq_first.output(0)), ("unique_first_idx", uniq_first.output(1)),
        ("bag_offsets", o3.embedding_bag_offsets_sum(table, bag_idx, offsets, const(0, np.int32), weights)),
        ("bag_packed", o3.embedding_bag_packed_sum(table, packed)),
        ("bag_mean", o15.embedding_bag_offsets(table, bag_idx, offsets, reduction="mean")),
    ]
    labels_v = np.array([2, 7, 2, 0], dtype=np.int64)
    _, first = np.unique(labels_v, return_index=True)
    first = np.sort(first)
    why = "Unique-10 sorted=false lists values in order of first occurrence (spec); CPU returns garbage"
    reference = {"unique_first": (labels_v[first], why), "unique_first_idx": (first.astype(np.int64), why)}
    return model(outs, [x, idx, labels, table, bag_idx, offsets, weights, packed], "index_ops"), {
        "x": rng.standard_normal((3, 5)).astype(np.float32),
        "idx": rng.integers(0, 5, (3, 2)).astype(np.int64),
        "labels": labels_v,
        "table": rng.standard_normal((6, 3)).astype(np.float32),
        "bag_idx": np.array([5, 0, 3, 3, 1], dtype=np.int32),
        "offsets": np.array([0, 2, 2], dtype=np.int32),
        "weights": rng.uniform(0.5, 2, 5).astype(np.float32),
        "packed": np.array([[0, 5, 5], [1, 2, 3]], dtype=np.int64),
    }, reference


def attention():
    """ScaledDotProductAttention-13: plain, causal with L < S, a boolean mask broadcast over
    heads, a float mask with an explicit scale, and k/v batches that broadcast."""
    q = param("q", np.float32, [2, 4, 5, 8])
    k = param("k", np.float32, [2, 4, 7, 8])
    v = param("v", np.float32, [2, 1, 7, 6])
    bmask = param("bmask", np.bool_, [2, 1, 5, 7])
    fmask = param("fmask", np.float32, [5, 7])
    outs = [
        ("plain", o13.scaled_dot_product_attention(q, k, v, causal=False)),
        ("causal", o13.scaled_dot_product_attention(q, k, v, causal=True)),
        ("bool_mask", o13.scaled_dot_product_attention(q, k, v, bmask, causal=False)),
        ("float_mask", o13.scaled_dot_product_attention(q, k, v, fmask, const(0.3, np.float32), causal=False)),
    ]
    bm = rng.uniform(0, 1, (2, 1, 5, 7)) > 0.3
    bm[..., 0] = True  # no fully masked rows: CPU and the spec give NaN there, tested in Rust
    return model(outs, [q, k, v, bmask, fmask], "attention"), {
        "q": rng.standard_normal((2, 4, 5, 8)).astype(np.float32),
        "k": rng.standard_normal((2, 4, 7, 8)).astype(np.float32),
        "v": rng.standard_normal((2, 1, 7, 6)).astype(np.float32),
        "bmask": bm,
        "fmask": rng.standard_normal((5, 7)).astype(np.float32),
    }


def fft():
    """RDFT-9 and IRDFT-9 as an FNO block uses them (rfft2, a spectral product, irfft2 back to
    the signal size), the last listed axis not being the last dim, a trimming signal_size, and
    an odd inverse length."""
    x = param("x", np.float32, [2, 4, 8, 6])
    y = param("y", np.float32, [3, 5])
    spec = o9.rdft(x, const([2, 3]))
    weights = const(rng.standard_normal((1, 4, 8, 4, 2)) * 0.5, np.float32)
    back = o9.irdft(o1.multiply(spec, weights), const([2, 3]), const([8, 6]))
    outs = [
        ("spectrum", spec),
        ("fno", back),
        ("swapped_axes", o9.rdft(y, const([1, 0]))),
        ("trimmed", o9.rdft(y, const([-1]), const([4]))),
        ("odd_inverse", o9.irdft(o9.rdft(y, const([1])), const([1]), const([5]))),
    ]
    return model(outs, [x, y], "fft"), {
        "x": rng.standard_normal((2, 4, 8, 6)).astype(np.float32),
        "y": rng.standard_normal((3, 5)).astype(np.float32),
    }


def einsum():
    """Einsum-7: matrix product, batched product, broadcasting ellipses, transpose, diagonal,
    a three-operand contraction, and the implicit form."""
    a = param("a", np.float32, [2, 3])
    b = param("b", np.float32, [3, 4])
    c = param("c", np.float32, [2, 1, 3, 4])
    d = param("d", np.float32, [5, 4, 2])
    sq = param("sq", np.float32, [3, 3])
    outs = [
        ("matmul", o7.einsum([a, b], "ij,jk->ik")),
        ("implicit", o7.einsum([a, b], "ij,jk")),
        ("ellipsis", o7.einsum([c, d], "...ij,...jk->...ik")),
        ("transpose", o7.einsum([c], "abcd->dcba")),
        ("diagonal", o7.einsum([sq], "ii->i")),
        ("three", o7.einsum([a, b, sq], "ij,jk,jl->lk")),
    ]
    return model(outs, [a, b, c, d, sq], "einsum"), {
        "a": rng.standard_normal((2, 3)).astype(np.float32),
        "b": rng.standard_normal((3, 4)).astype(np.float32),
        "c": rng.standard_normal((2, 1, 3, 4)).astype(np.float32),
        "d": rng.standard_normal((5, 4, 2)).astype(np.float32),
        "sq": rng.standard_normal((3, 3)).astype(np.float32),
    }


def pillar_max():
    """A MatMul with a bias and ReLU, then ReduceMax over dim -2 (PointPillars' pillar
    encoder: the prepared MatMul takes the ReduceMax over, so the product is never written),
    on a short inner dim; and a 4-D one on a long inner dim with keep_dims and a negative
    axis, without the bias."""
    x = param("points", np.float32, [6, 32, 9])
    w = const(rng.standard_normal((64, 9)), np.float32)
    lin = o1.relu(o1.add(o1.matmul(x, w, False, True), const(rng.standard_normal(64), np.float32)))
    pooled = o1.reduce_max(lin, const([1]), False)
    y = param("rows", np.float32, [2, 3, 5, 40])
    prod = o1.matmul(y, const(rng.standard_normal((40, 24)), np.float32), False, False)
    kept = o1.reduce_max(prod, const([-2]), True)
    inputs = {"points": rng.standard_normal((6, 32, 9)).astype(np.float32),
              "rows": rng.standard_normal((2, 3, 5, 40)).astype(np.float32)}
    return model([("pooled", pooled), ("kept", kept)], [x, y], "pillar_max"), inputs


def recurrent():
    """LSTMSequence-5, GRUSequence-5, RNNSequence-5 in every direction, and LSTMCell-4,
    GRUCell-3, RNNCell-0: weights as constants (as converters write them), sequence lengths
    that end early, are the whole sequence or zero (the state then reads zero, as OpenVINO's
    reference and CPU give), clip, non-default activations, and GRU's linear_before_reset."""
    r = np.random.default_rng(20261126)
    b, t, i, h = 3, 5, 4, 3

    def w(*shape):
        return const(r.standard_normal(shape) * 0.6, np.float32)

    x = param("x", np.float32, [b, t, i])
    h1 = param("h1", np.float32, [b, 1, h])
    c1 = param("c1", np.float32, [b, 1, h])
    h2 = param("h2", np.float32, [b, 2, h])
    c2 = param("c2", np.float32, [b, 2, h])
    lens = param("lens", np.int32, [b])
    x0 = param("x0", np.float32, [b, i])
    h0 = param("h0", np.float32, [b, h])
    c0 = param("c0", np.float32, [b, h])
    full = const([t] * b, np.int64)
    lstm_f = o5.lstm_sequence(x, h1, c1, lens, w(1, 4 * h, i), w(1, 4 * h, h), w(1, 4 * h), h, "forward")
    lstm_r = o5.lstm_sequence(x, h1, c1, lens, w(1, 4 * h, i), w(1, 4 * h, h), w(1, 4 * h), h, "reverse",
                              activations=["sigmoid", "relu", "tanh"], clip=0.8)
    lstm_b = o5.lstm_sequence(x, h2, c2, full, w(2, 4 * h, i), w(2, 4 * h, h), w(2, 4 * h), h, "bidirectional")
    gru_f = o5.gru_sequence(x, h1, lens, w(1, 3 * h, i), w(1, 3 * h, h), w(1, 3 * h), h, "forward")
    gru_b = o5.gru_sequence(x, h2, lens, w(2, 3 * h, i), w(2, 3 * h, h), w(2, 4 * h), h, "bidirectional",
                            linear_before_reset=True, clip=1.5)
    rnn_r = o5.rnn_sequence(x, h1, lens, w(1, h, i), w(1, h, h), w(1, h), h, "reverse")
    rnn_b = o5.rnn_sequence(x, h2, full, w(2, h, i), w(2, h, h), w(2, h), h, "bidirectional",
                            activations=["relu"], clip=2.0)
    lstm_cell = o4.lstm_cell(x0, h0, c0, w(4 * h, i), w(4 * h, h), w(4 * h), h)
    gru_cell = o3.gru_cell(x0, h0, w(3 * h, i), w(3 * h, h), w(4 * h), h, linear_before_reset=True)
    gru_cell_reset = o3.gru_cell(x0, h0, w(3 * h, i), w(3 * h, h), w(3 * h), h,
                                 activations=["sigmoid", "relu"], clip=1.0)
    rnn_cell = o3.rnn_cell(x0, h0, w(h, i), w(h, h), w(h), h, ["tanh"], [], [], 0.0)
    outs = []
    for name, node, parts in [("lstm_f", lstm_f, "yhc"), ("lstm_r", lstm_r, "yhc"), ("lstm_b", lstm_b, "yhc"),
                              ("gru_f", gru_f, "yh"), ("gru_b", gru_b, "yh"), ("rnn_r", rnn_r, "yh"),
                              ("rnn_b", rnn_b, "yh"), ("lstm_cell", lstm_cell, "hc"), ("gru_cell", gru_cell, "h"),
                              ("gru_cell_reset", gru_cell_reset, "h"), ("rnn_cell", rnn_cell, "h")]:
        outs += [(f"{name}_{part}", node.output(k)) for k, part in enumerate(parts)]
    return model(outs, [x, h1, c1, h2, c2, lens, x0, h0, c0], "recurrent"), {
        "x": r.standard_normal((b, t, i)).astype(np.float32),
        "h1": r.standard_normal((b, 1, h)).astype(np.float32),
        "c1": r.standard_normal((b, 1, h)).astype(np.float32),
        "h2": r.standard_normal((b, 2, h)).astype(np.float32),
        "c2": r.standard_normal((b, 2, h)).astype(np.float32),
        "lens": np.array([t, 2, 0], dtype=np.int32),
        "x0": r.standard_normal((b, i)).astype(np.float32),
        "h0": r.standard_normal((b, h)).astype(np.float32),
        "c0": r.standard_normal((b, h)).astype(np.float32),
    }


def backward_scan(seq, h0, xs, h, nh, axis):
    """A TensorIterator reading `seq` backwards along `axis` into body Parameter `xs`, with
    the state `h` (from `h0`) replaced by the body's `nh` each step: the node, the body's
    Results (`nh`, and `nh` unsqueezed at `axis`), the last state and the states joined
    backwards along `axis`."""
    r_h = o1.result(nh)
    r_hs = o1.result(o1.unsqueeze(nh, const(axis)))
    ti = o8.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_hs], [xs, h], "ti_body"))
    ti.set_sliced_input(xs, seq.output(0), -1, -1, 1, 0, axis)
    ti.set_merged_input(h, h0.output(0), r_h.output(0))
    last = ti.get_iter_value(r_h.output(0), -1)
    back = ti.get_concatenated_slices(r_hs.output(0), -1, -1, 1, 0, axis)
    return ti, r_h, r_hs, last, back


def control_flow():
    """Loop-5, TensorIterator-1 and If-8 as converters write them. A Loop with a trip count
    input, a sliced input, a back-edged accumulator, an invariant input, the current iteration
    (i32 scalar) and a condition that ends it before the trip count, its values joined (the
    sliced input has a dynamic length); inside
    its body an If on the iteration's parity (a body within a body). A TensorIterator over a
    sequence read backwards (h = 10 h + x[t]) with joined outputs in both orders. An If on an
    input, once true and once false, whose branches read different inputs."""
    x = param("x", np.float32, [-1, 3])
    acc0 = param("acc0", np.float32, [1, 3])
    scale = param("scale", np.float32, [1, 3])
    trip = param("trip", np.int64, [])
    go = param("go", np.bool_, [])
    # The Loop body: acc = acc + (odd(i) ? x_i * scale : x_i - scale); stop once i + 1 == 4.
    i = o1.parameter([], np.int32)
    acc = o1.parameter([1, 3], np.float32)
    xi = o1.parameter([1, 3], np.float32)
    sc = o1.parameter([1, 3], np.float32)
    odd = o1.equal(o1.floor_mod(i, o1.constant(np.int32(2))), o1.constant(np.int32(1)))
    tx, ts, ex, es = (o1.parameter([1, 3], np.float32) for _ in range(4))
    then_b = ov.Model([o1.result(o1.multiply(tx, ts))], [tx, ts], "odd")
    else_b = ov.Model([o1.result(o1.subtract(ex, es))], [ex, es], "even")
    branch = o8.if_op(odd.output(0))
    branch.set_then_body(then_b)
    branch.set_else_body(else_b)
    branch.set_input(xi.output(0), tx, ex)
    branch.set_input(sc.output(0), ts, es)
    step = branch.set_output(then_b.get_results()[0], else_b.get_results()[0])
    new_acc = o1.add(acc, step)
    r_acc = o1.result(new_acc)
    r_cond = o1.result(o1.less(o1.add(i, o1.constant(np.int32(1))), o1.constant(np.int32(4))))
    r_each = o1.result(o1.unsqueeze(new_acc, const(0)))
    body = ov.Model([r_acc, r_cond, r_each], [i, acc, xi, sc], "loop_body")
    loop = o8.loop(trip, go)
    loop.set_function(body)
    loop.set_special_body_ports([0, 1])
    loop.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(acc, acc0.output(0), r_acc.output(0))
    loop.set_invariant_input(sc, scale.output(0))
    loop_last = loop.get_iter_value(r_acc.output(0), -1)
    loop_each = loop.get_concatenated_slices(r_each.output(0), 0, 1, 1, -1, 0)

    seq = param("seq", np.float32, [4, 2, 2])
    h0 = param("h0", np.float32, [2, 2])
    xs = o1.parameter([1, 2, 2], np.float32)
    h = o1.parameter([2, 2], np.float32)
    nh = o1.add(o1.multiply(h, o1.constant(np.float32(10))), o1.squeeze(xs, const([0])))
    ti, r_h, r_hs, ti_last, ti_back = backward_scan(seq, h0, xs, h, nh, 0)
    ti_fwd = ti.get_concatenated_slices(r_hs.output(0), 0, 1, 1, -1, 0)

    def choose(flag):
        a, b = o1.parameter([-1, 3], np.float32), o1.parameter([1, 3], np.float32)
        c = o1.parameter([1, 3], np.float32)
        then_b = ov.Model([o1.result(o1.add(a, b))], [a, b], "then")
        else_b = ov.Model([o1.result(o1.negative(c))], [c], "else")
        node = o8.if_op(flag.output(0))
        node.set_then_body(then_b)
        node.set_else_body(else_b)
        node.set_input(x.output(0), a, None)
        node.set_input(scale.output(0), b, c)
        return node.set_output(then_b.get_results()[0], else_b.get_results()[0])

    yes, no = param("yes", np.bool_, []), param("no", np.bool_, [])
    outs = [("loop_last", loop_last), ("loop_each", loop_each), ("ti_last", ti_last), ("ti_back", ti_back),
            ("ti_fwd", ti_fwd), ("if_yes", choose(yes)), ("if_no", choose(no))]
    r = np.random.default_rng(20261127)
    return model(outs, [x, acc0, scale, trip, go, seq, h0, yes, no], "control_flow"), {
        "x": r.standard_normal((6, 3)).astype(np.float32),
        "acc0": r.standard_normal((1, 3)).astype(np.float32),
        "scale": r.standard_normal((1, 3)).astype(np.float32),
        "trip": np.array(6, np.int64),
        "go": np.array(True),
        "seq": r.integers(0, 10, (4, 2, 2)).astype(np.float32),
        "h0": np.zeros((2, 2), np.float32),
        "yes": np.array(True),
        "no": np.array(False),
    }


def loop_invariant():
    """Recurrent bodies whose input projections read only the sliced input and constants,
    which irun runs for every iteration at once before the loop: a TensorIterator over a
    [3, 5, 4] sequence read backwards along axis 1, whose body reshapes its slice, projects
    it (MatMul, bias, ReLU), gates the projection by its own sigmoid (two hoisted values
    multiplied) and mixes in the state and a ReduceSum of the raw slice (the sliced input
    also read per iteration); a Loop with a constant-true condition over a [6, 2, 8] sequence
    whose body projects its [1, 2, 8] slice without squeezing it (transpose_b) and carries
    the state; and a batch-1 TensorIterator (one row per iteration)."""
    r = np.random.default_rng(20261128)
    seq = param("seq", np.float32, [3, 5, 4])
    h0 = param("h0", np.float32, [3, 6])
    xs = o1.parameter([3, 1, 4], np.float32)
    h = o1.parameter([3, 6], np.float32)
    x2 = o1.reshape(xs, const([3, 4]), False)
    w = o1.constant(r.standard_normal((4, 6)).astype(np.float32))
    b = o1.constant(r.standard_normal((1, 6)).astype(np.float32))
    proj = o1.relu(o1.add(o1.matmul(x2, w, False, False), b))
    gated = o1.multiply(proj, o1.sigmoid(proj))
    u = o1.constant((0.5 * r.standard_normal((6, 6))).astype(np.float32))
    raw = o1.reduce_sum(x2, const([1]), True)
    nh = o1.tanh(o1.add(o1.add(gated, o1.matmul(h, u, False, False)), raw))
    _, _, _, ti_last, ti_each = backward_scan(seq, h0, xs, h, nh, 1)

    xs_seq = param("xs", np.float32, [6, 2, 8])
    trip = param("trip", np.int64, [])
    s0 = param("s0", np.float32, [1, 2, 8])
    xi = o1.parameter([1, 2, 8], np.float32)
    st = o1.parameter([1, 2, 8], np.float32)
    w2 = o1.constant((0.3 * r.standard_normal((8, 8))).astype(np.float32))
    ns = o1.tanh(o1.add(o1.matmul(xi, w2, False, True), o1.multiply(st, o1.constant(np.float32(0.9)))))
    r_s = o1.result(ns)
    r_go = o1.result(o1.constant(np.array(True)))
    loop = o8.loop(trip, o1.constant(np.array(True)))
    loop.set_function(ov.Model([r_s, r_go], [xi, st], "loop_body"))
    loop.set_special_body_ports([-1, 1])
    loop.set_sliced_input(xi, xs_seq.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(st, s0.output(0), r_s.output(0))
    loop_last = loop.get_iter_value(r_s.output(0), -1)
    loop_each = loop.get_concatenated_slices(r_s.output(0), 0, 1, 1, -1, 0)

    one = param("one", np.float32, [7, 1, 4])
    xo = o1.parameter([1, 1, 4], np.float32)
    ho = o1.parameter([1, 4], np.float32)
    w3 = o1.constant((0.5 * r.standard_normal((4, 4))).astype(np.float32))
    no = o1.tanh(o1.add(o1.matmul(o1.squeeze(xo, const([0])), w3, False, False), ho))
    r_o = o1.result(no)
    ti1 = o8.tensor_iterator()
    ti1.set_body(ov.Model([r_o], [xo, ho], "row_body"))
    ti1.set_sliced_input(xo, one.output(0), 0, 1, 1, -1, 0)
    ti1.set_merged_input(ho, o1.constant(np.zeros((1, 4), np.float32)).output(0), r_o.output(0))
    row_last = ti1.get_iter_value(r_o.output(0), -1)

    outs = [("ti_last", ti_last), ("ti_each", ti_each), ("loop_last", loop_last), ("loop_each", loop_each),
            ("row_last", row_last)]
    return model(outs, [seq, h0, xs_seq, trip, s0, one], "loop_invariant"), {
        "seq": r.standard_normal((3, 5, 4)).astype(np.float32),
        "h0": r.standard_normal((3, 6)).astype(np.float32),
        "xs": r.standard_normal((6, 2, 8)).astype(np.float32),
        "trip": np.array(6, np.int64),
        "s0": r.standard_normal((1, 2, 8)).astype(np.float32),
        "one": r.standard_normal((7, 1, 4)).astype(np.float32),
    }


def yolo():
    """YOLO heads: RegionYolo-1 as YOLOv2 (softmax over the classes, dims 1..3 flattened) and
    as YOLOv3 (the masked regions, every class through the sigmoid) on a batch of two, and
    ReorgYolo-2 (YOLOv2's passthrough) with stride 2."""
    r = np.random.default_rng(33)
    v2 = param("v2", np.float32, [1, 16, 5, 6])
    v3 = param("v3", np.float32, [2, 75, 4, 4])
    reorg = param("reorg", np.float32, [1, 8, 4, 6])
    region_v2 = o1.region_yolo(v2, 4, 3, 2, True, [], 1, 3, [10.0, 14.0, 23.0, 27.0])
    region_v3 = o1.region_yolo(v3, 4, 20, 9, False, [0, 1, 2], 1, 3,
                               [10.0, 14.0, 23.0, 27.0, 37.0, 58.0])
    m = model([("region_v2", region_v2), ("region_v3", region_v3),
               ("reorg_out", o2.reorg_yolo(reorg, [2]))], [v2, v3, reorg], "yolo")
    inputs = {
        "v2": (r.standard_normal((1, 16, 5, 6)) * 3).astype(np.float32),
        "v3": (r.standard_normal((2, 75, 4, 4)) * 3).astype(np.float32),
        "reorg": r.standard_normal((1, 8, 4, 6)).astype(np.float32),
    }
    return m, inputs


def ssd_priors():
    """PriorBoxClustered-1 and PriorBox-1/-8 as SSD heads use them: the feature map's and the
    image's sizes taken by ShapeOf and StridedSlice (folded); clustered boxes with the image
    size as the step (one variance, clipped) and with explicit steps, an offset and four
    variances, unclipped; PriorBox in the modes below."""
    feature = param("feature", np.float32, [1, 8, 5, 7])
    image = param("image", np.float32, [1, 3, 60, 84])

    def hw(x):
        return o1.strided_slice(o3.shape_of(x, "i64"), const([2]), const([4]), const([1]), [0], [0])

    a = o1.prior_box_clustered(hw(feature), hw(image), {
        "width": [10.0, 24.5, 60.0], "height": [12.0, 30.0, 20.0], "clip": True,
        "offset": 0.5, "variance": [0.1]})
    b = o1.prior_box_clustered(hw(feature), hw(image), {
        "width": [8.0, 100.0], "height": [16.0, 3.0], "clip": False, "step_w": 12.0,
        "step_h": 11.0, "offset": 0.25, "variance": [0.1, 0.1, 0.2, 0.2]})
    # PriorBox: SSD's min/max sizes with flipped ratios (v8 and v1), the other order of the
    # max box, mxnet's scale_all_sizes=false (sizes scaled by the image height), and fixed
    # sizes with densities.
    ssd = {"min_size": [16.0, 24.0], "max_size": [32.0, 40.0], "aspect_ratio": [2.0, 3.0],
           "flip": True, "clip": False, "step": 12.0, "offset": 0.5,
           "variance": [0.1, 0.1, 0.2, 0.2]}
    c = o8.prior_box(hw(feature), hw(image), ssd)
    d = o1.prior_box(hw(feature), hw(image), dict(ssd, clip=True, variance=[0.2]))
    e = o8.prior_box(hw(feature), hw(image), dict(ssd, min_max_aspect_ratios_order=False,
                                                  step=0.0))
    f = o8.prior_box(hw(feature), hw(image), {
        "min_size": [0.2, 0.35], "aspect_ratio": [2.0], "flip": False, "clip": True,
        "step": 0.0, "offset": 0.5, "scale_all_sizes": False, "variance": [0.1]})
    g = o8.prior_box(hw(feature), hw(image), {
        "fixed_size": [16.0, 30.0], "density": [2.0, 3.0],
        "aspect_ratio": [2.0], "flip": False, "clip": False, "step": 12.0, "offset": 0.5})
    add = o1.add(feature, const(0.0, np.float32))
    m = model([("priors_a", a), ("priors_b", b), ("box_ssd", c), ("box_v1_clip", d),
               ("box_max_last", e), ("box_mxnet", f), ("box_fixed", g), ("feature_out", add)],
              [feature, image], "ssd_priors")
    r = np.random.default_rng(34)
    inputs = {"feature": r.standard_normal((1, 8, 5, 7)).astype(np.float32),
              "image": r.standard_normal((1, 3, 60, 84)).astype(np.float32)}
    return m, inputs


def ssd_head():
    """DetectionOutput-8 and -1 as SSD and RefineDet heads use them, on a batch of two with 30
    priors and 4 classes: CENTER_SIZE with shared locations, top_k and keep_top_k (v8);
    CORNER with per-class locations, per-image priors, no background and both clips (v1);
    MXNet-style suppression; unnormalized 5-value priors with the variances in the target,
    whose list a prior with image id -1 ends; and the ARM inputs with an objectness score."""
    r = np.random.default_rng(35)
    n, p, c = 2, 30, 4

    def priors(batch, normalized=True, variances=True):
        xy = r.uniform(0.0, 0.7, (batch, p, 2))
        wh = r.uniform(0.1, 0.4, (batch, p, 2))
        boxes = np.concatenate([xy, xy + wh], axis=2)
        if not normalized:
            boxes = np.concatenate([np.zeros((batch, p, 1)), boxes * [300, 200, 300, 200]], 2)
            boxes[:, 25, 0] = -1.0
        rows = [boxes.reshape(batch, 1, -1)]
        if variances:
            rows.append(np.tile([0.1, 0.1, 0.2, 0.2], (batch, 1, p)))
        return np.concatenate(rows, axis=1).astype(np.float32)

    def conf():
        logits = r.standard_normal((n, p, c)) * 2.0
        e = np.exp(logits)
        return (e / e.sum(2, keepdims=True)).reshape(n, p * c).astype(np.float32)

    inputs = {
        "loc": (r.standard_normal((n, p * 4)) * 0.5).astype(np.float32),
        "loc_per_class": (r.standard_normal((n, p * c * 4)) * 0.5).astype(np.float32),
        "conf": conf(),
        "priors": priors(1),
        "priors_per_image": priors(n),
        "priors_pixels": priors(1, normalized=False, variances=False),
        "arm_conf": r.uniform(0.0, 1.0, (n, p * 2)).astype(np.float32),
        "arm_loc": (r.standard_normal((n, p * 4)) * 0.3).astype(np.float32),
    }
    ps = {k: param(k, np.float32, list(v.shape)) for k, v in inputs.items()}
    ssd = {"keep_top_k": [10], "nms_threshold": 0.45, "top_k": 20, "confidence_threshold": 0.05,
           "code_type": "caffe.PriorBoxParameter.CENTER_SIZE", "share_location": True,
           "background_label_id": 0, "normalized": True}
    a = o8.detection_output(ps["loc"], ps["conf"], ps["priors"], ssd)
    b = o1.detection_output(ps["loc_per_class"], ps["conf"], ps["priors_per_image"], dict(
        ssd, num_classes=c, keep_top_k=[-1], top_k=-1, code_type="caffe.PriorBoxParameter.CORNER",
        share_location=False, background_label_id=-1, clip_before_nms=True,
        clip_after_nms=True, confidence_threshold=0.2))
    m_x = o8.detection_output(ps["loc"], ps["conf"], ps["priors"], dict(
        ssd, decrease_label_id=True, top_k=15, keep_top_k=[12], confidence_threshold=0.1))
    d = o8.detection_output(ps["loc"], ps["conf"], ps["priors_pixels"], dict(
        ssd, normalized=False, input_width=300, input_height=200,
        variance_encoded_in_target=True, keep_top_k=[-1], top_k=6))
    e = o8.detection_output(ps["loc"], ps["conf"], ps["priors"], dict(
        ssd, objectness_score=0.3, keep_top_k=[16]), ps["arm_conf"], ps["arm_loc"])
    m = model([("det_ssd", a), ("det_v1_per_class", b), ("det_mxnet", m_x),
               ("det_pixels", d), ("det_arm", e)], list(ps.values()), "ssd_head")
    return m, inputs


def rpn():
    """Proposal-4 and -1 as Faster R-CNN region proposal networks use them, on a batch of two
    6 x 8 maps: Caffe anchors (base 16, three ratios, two scales) with a min_size filter, and
    TensorFlow's (base 64, no rounding, swapped axes) with a four-value image_shape, box
    scales, clipping after suppression and normalized output; ROIPooling-2 of a feature map
    by the proposals (max) and by normalized boxes (bilinear). Scores are distinct and every
    image keeps post_nms_topn boxes, so the ranking has no ties (OpenVINO CPU's sort is not
    stable) and no unwritten score."""
    r = np.random.default_rng(36)
    n, h, w, a = 2, 6, 8, 6
    inputs = {
        "class_probs": r.uniform(0.0, 1.0, (n, 2 * a, h, w)).astype(np.float32),
        "bbox_deltas": (r.standard_normal((n, 4 * a, h, w)) * 0.2).astype(np.float32),
        "image_shape": np.array([96.0, 128.0, 1.0], np.float32),
        "image_shape_4": np.array([100.0, 90.0, 1.5, 0.8], np.float32),
        "features": r.standard_normal((n, 4, h, w)).astype(np.float32),
    }
    # Normalized boxes for bilinear ROIPooling, one per image and three more.
    corners = np.sort(r.uniform(-0.1, 1.0, (5, 2, 2)), axis=1)
    inputs["norm_rois"] = np.concatenate(
        [np.array([[0], [1], [1], [0], [1]], np.float32),
         corners[:, :, 0], corners[:, :, 1]], 1)[:, [0, 1, 3, 2, 4]].astype(np.float32)
    ps = {k: param(k, np.float32, list(v.shape)) for k, v in inputs.items()}
    u = np.uint32
    caffe = {"base_size": u(16), "pre_nms_topn": u(100), "post_nms_topn": u(30),
             "nms_thresh": 0.7, "feat_stride": u(16), "min_size": u(4),
             "ratio": [0.5, 1.0, 2.0], "scale": [2.0, 4.0]}
    v4 = o4.proposal(ps["class_probs"], ps["bbox_deltas"], ps["image_shape"], caffe)
    tf = o1.proposal(ps["class_probs"], ps["bbox_deltas"], ps["image_shape_4"], dict(
        caffe, framework="tensorflow", base_size=u(64), ratio=[0.5, 1.0, 2.0], scale=[0.25, 0.5],
        clip_after_nms=True, normalize=True, box_size_scale=5.0, box_coordinate_scale=2.0,
        post_nms_topn=u(20), min_size=u(2)))
    ps["norm_rois"] = param("norm_rois", np.float32, [5, 5])
    # Faster R-CNN's head: ROIPooling-2 of the feature map by the proposals (image
    # coordinates at the map's stride of 16), and bilinear on normalized boxes.
    pooled = o2.roi_pooling(ps["features"], v4.output(0), [3, 3], 1.0 / 16, "max")
    pooled_b = o2.roi_pooling(ps["features"], ps["norm_rois"], [4, 3], 1.0, "bilinear")
    m = model([("rois", v4.output(0)), ("roi_scores", v4.output(1)), ("rois_tf", tf),
               ("pooled", pooled), ("pooled_bilinear", pooled_b)], list(ps.values()), "rpn")
    return m, inputs


def pools_roll():
    """AdaptiveAvgPool-8 and AdaptiveMaxPool-8 as PyTorch's converter writes them, on 1, 2
    and 3 spatial dims, sizes that divide and that do not (overlapping windows), upsampling
    sizes; Roll-7 as torch.roll and Swin's shifted windows write it, with
    negative shifts and axes and an axis rolled twice."""
    r = np.random.default_rng(37)
    x2 = param("x2", np.float32, [2, 3, 10, 13])
    x1 = param("x1", np.float32, [2, 4, 9])
    x3 = param("x3", np.float32, [1, 2, 5, 6, 7])
    avg2 = o8.adaptive_avg_pool(x2, const([4, 5]))
    max2 = o8.adaptive_max_pool(x2, const([3, 6], np.int32), "i32")
    avg1 = o8.adaptive_avg_pool(x1, const([12]))
    # OpenVINO CPU refuses AdaptiveMaxPool with i64 indices (its default: "CPU plugin does
    # not support i64 for use with oneDNN"), so both cases here ask for i32.
    max3 = o8.adaptive_max_pool(x3, const([2, 4, 3]), "i32")
    roll_a = o7.roll(x2, const([3, -5]), const([2, 3]))
    # A scalar shift over several axes is valid (the specification and reference apply it
    # to each) but OpenVINO CPU refuses it ("'shift' and 'axes' dimensions mismatch"): the
    # unit tests cover it, the golden gives the shift per axis.
    roll_b = o7.roll(x3, const([-2, -2, -2]), const([-1, 2, 0]))
    roll_c = o7.roll(x1, const([4, 1, -2], np.int32), const([2, 2, 1], np.int32))
    m = model([("avg2", avg2), ("max2", max2.output(0)), ("max2_index", max2.output(1)),
               ("avg1", avg1), ("max3", max3.output(0)), ("max3_index", max3.output(1)),
               ("roll_a", roll_a), ("roll_b", roll_b), ("roll_c", roll_c)], [x2, x1, x3], "pools_roll")
    inputs = {"x2": r.standard_normal((2, 3, 10, 13)).astype(np.float32),
              "x1": r.standard_normal((2, 4, 9)).astype(np.float32),
              "x3": r.standard_normal((1, 2, 5, 6, 7)).astype(np.float32)}
    return m, inputs


def converted():
    """The committed PyTorch conversions that irun can run: inputs for each."""
    n, f, e = 10, 16, 40
    x = rng.standard_normal((n, f)).astype(np.float32)
    edges = rng.integers(0, n, (2, e)).astype(np.int64)
    cases = {
        "torch_sage_mean": {"x": x, "edge_index": edges},
        "torch_gcn": {"x": x, "edge_index": edges},
        "torch_kv_cache": {"k": rng.standard_normal((1, 4, 3, 16)).astype(np.float32),
                           "pos": np.array([5, 63, 0], dtype=np.int64)},
    }
    # ONNX's LSTM test with peepholes, converted by OpenVINO's ONNX frontend, which drops the
    # peepholes (P is left unconnected): the expected values are those of the IR as written.
    r = np.random.default_rng(20261126)
    cases["onnx_test_lstm_with_peepholes"] = {
        "X": r.standard_normal((1, 2, 4)).astype(np.float32),
        "W": (r.standard_normal((1, 12, 4)) * 0.5).astype(np.float32),
        "R": (r.standard_normal((1, 12, 3)) * 0.5).astype(np.float32),
        "B": (r.standard_normal((1, 24)) * 0.5).astype(np.float32),
        "sequence_lens": np.array([1, 1], dtype=np.int32),
        "initial_h": r.standard_normal((1, 2, 3)).astype(np.float32),
        "initial_c": r.standard_normal((1, 2, 3)).astype(np.float32),
        "P": r.standard_normal((1, 9)).astype(np.float32),
    }
    return cases


def main():
    only = set(sys.argv[1:])
    for build in (shape_ops, int_arith, activations, gather_split_tile, reduce_norm, small_cnn, index_ops, attention, fft, einsum,
                  pillar_max, recurrent, control_flow, loop_invariant, yolo, ssd_priors, ssd_head, rpn, pools_roll):
        name = build.__name__
        if only and name not in only:
            continue
        m, inputs, *reference = build()
        write(os.path.join(ROOT, "ops", name), m, inputs, numpy_reference=reference[0] if reference else None)
    for name, inputs in converted().items():
        if only and name not in only:
            continue
        write(os.path.join(ROOT, "converted", name), None, inputs, save_model=False)


if __name__ == "__main__":
    main()
