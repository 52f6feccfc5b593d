#!/usr/bin/env python3
"""Converts real PyTorch models (random weights, nothing downloaded) with OpenVINO's own
converter and records, next to each model.xml: inputs.npz, expected.npz (OpenVINO CPU with
INFERENCE_PRECISION_HINT=f32) and torch.npz (eager PyTorch), for `tools/check_real_models.py`
to compare irun with. Full-size models stay out of the repository (tools/out/real).

  resnet18        torchvision ResNet-18, 1x3x224x224
  mobilenet_v3    torchvision MobileNetV3-small, 1x3x224x224
  bert            transformers BertModel, 2 layers, hidden 128, 2 heads, sequence 32
  gpt2            transformers GPT2LMHeadModel, 2 layers, hidden 128, 2 heads, sequence 16
  gpt2_kv         the same GPT-2 taking and returning its KV cache (16 cached positions, 4 new)
  gat             a graph attention layer: edge softmax with scatter_reduce(amax) and index_add_
  pointpillars    a pillar encoder, the pseudo-image scatter (canvas[:, idx] = pillars) and a conv head
  moe             a Mixtral-style mixture of experts: top-2 routing, torch.where, index_add_
  fno             a Fourier neural operator block: rfft2, a spectral mix of the low modes, irfft2
  dlrm            a DLRM: EmbeddingBag sums, a bottom MLP, pairwise dot interactions, a top MLP
  label_smoothing one_hot and scatter_ label smoothing with a cross-entropy
  confusion       a confusion-matrix histogram with index_put_(accumulate=True)
  voxel           a dynamic voxel encoder: torch.unique(return_inverse) + scatter_reduce(amax, mean)
  swin            torchvision SwinTransformer, 2 stages (embed 24, window 4: torch.roll), 1x3x32x32
  adaptive_pools  a conv and a head over adaptive_avg_pool2d (5, 7) and adaptive_max_pool2d 3
  gcn, sage_mean  (--full only) tools/convert_torch_models.py's GNNs on 50,000 nodes, 500,000 edges

Each runs at two sizes: the default writes the reduced variants committed under models/real;
`--full` writes full-size ones (tools/out/real_full) for tools/bench_models.py. `--only NAME ...`
converts a subset.

    python3 -m venv venv && venv/bin/pip install openvino numpy torch torchvision "transformers==4.46.3"
    venv/bin/python tools/convert_real_models.py [OUT_DIR]      # default tools/out/real
"""
import os
import sys

import numpy as np
import openvino as ov
import torch
import torchvision

from ov_expected import openvino_expected

torch.manual_seed(0)
rng = np.random.default_rng(11)


F = torch.nn.functional


class GAT(torch.nn.Module):
    """One graph attention layer (Velickovic et al.), written the way PyG-free code writes it."""

    def __init__(self, fin, heads, fout):
        super().__init__()
        self.heads, self.fout = heads, fout
        self.lin = torch.nn.Linear(fin, heads * fout, bias=False)
        self.att_src = torch.nn.Parameter(0.3 * torch.randn(1, heads, fout))
        self.att_dst = torch.nn.Parameter(0.3 * torch.randn(1, heads, fout))

    def forward(self, x, edge_index):
        n = x.shape[0]
        h = self.lin(x).view(n, self.heads, self.fout)
        src, dst = edge_index[0], edge_index[1]
        e = F.leaky_relu((h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst], 0.2)
        idx = dst.unsqueeze(1).expand_as(e)
        emax = x.new_zeros(n, self.heads).scatter_reduce(0, idx, e, "amax", include_self=False)
        ex = torch.exp(e - emax[dst])
        denom = x.new_zeros(n, self.heads).index_add_(0, dst, ex)
        msg = h[src] * (ex / denom[dst]).unsqueeze(-1)
        out = x.new_zeros(n, self.heads, self.fout).index_add_(0, dst, msg)
        return F.elu(out.reshape(n, -1))


class PointPillars(torch.nn.Module):
    """PointPillars' pillar feature net, the pseudo-image scatter and a small detection head."""

    def __init__(self, c, height, width):
        super().__init__()
        self.c, self.height, self.width = c, height, width
        self.pfn = torch.nn.Linear(9, c)

        def block(cin, cout, stride):
            return [torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]

        self.backbone = torch.nn.Sequential(*block(c, c, 1), *block(c, 2 * c, 2), *block(2 * c, 2 * c, 1))
        self.cls = torch.nn.Conv2d(2 * c, 2, 1)
        self.box = torch.nn.Conv2d(2 * c, 7, 1)

    def forward(self, pillars, coords):
        f = F.relu(self.pfn(pillars)).max(dim=1).values
        idx = coords[:, 0] * self.width + coords[:, 1]
        canvas = f.new_zeros(self.c, self.height * self.width)
        canvas[:, idx] = f.t()
        x = self.backbone(canvas.view(1, self.c, self.height, self.width))
        return self.cls(x), self.box(x)


class Expert(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1 = torch.nn.Linear(d, f, bias=False)
        self.w2 = torch.nn.Linear(f, d, bias=False)
        self.w3 = torch.nn.Linear(d, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(torch.nn.Module):
    """Mixtral's sparse MoE block: softmax, top-2, one_hot, torch.where per expert, index_add_."""

    def __init__(self, d, f, experts):
        super().__init__()
        self.gate = torch.nn.Linear(d, experts, bias=False)
        self.experts = torch.nn.ModuleList(Expert(d, f) for _ in range(experts))

    def forward(self, x):
        logits = self.gate(x)
        weights, chosen = torch.topk(F.softmax(logits, dim=1), 2, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        mask = F.one_hot(chosen, num_classes=len(self.experts)).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(mask[e])
            out.index_add_(0, token, expert(x[token]) * weights[token, slot, None])
        return out, logits


class FNO(torch.nn.Module):
    """A Fourier neural operator block: rfft2, a complex channel mix of the lowest modes, irfft2."""

    def __init__(self, c, m1, m2):
        super().__init__()
        self.m1, self.m2 = m1, m2
        scale = 1.0 / (c * c)
        self.w_re = torch.nn.Parameter(scale * torch.randn(c, c, m1, m2))
        self.w_im = torch.nn.Parameter(scale * torch.randn(c, c, m1, m2))
        self.skip = torch.nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        ft = torch.view_as_real(torch.fft.rfft2(x, norm="ortho"))[:, :, : self.m1, : self.m2]
        re, im = ft[..., 0], ft[..., 1]
        mix = lambda a, k: torch.einsum("bixy,ioxy->boxy", a, k)  # noqa: E731
        spec = torch.stack([mix(re, self.w_re) - mix(im, self.w_im), mix(re, self.w_im) + mix(im, self.w_re)], -1)
        full = x.new_zeros(b, c, h, w // 2 + 1, 2)
        full[:, :, : self.m1, : self.m2] = spec
        y = torch.fft.irfft2(torch.view_as_complex(full), s=(h, w), norm="ortho")
        return F.gelu(y + self.skip(x))


class DLRM(torch.nn.Module):
    """DLRM: EmbeddingBag sums over variable-length bags, MLPs and pairwise dot interactions."""

    def __init__(self, rows, tables, dim):
        super().__init__()
        self.emb = torch.nn.ModuleList(torch.nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = torch.nn.Sequential(torch.nn.Linear(13, 64), torch.nn.ReLU(), torch.nn.Linear(64, dim), torch.nn.ReLU())
        n = tables + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("pairs", li * n + lj)
        self.top = torch.nn.Sequential(torch.nn.Linear(dim + len(li), 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        t = torch.stack([x] + [e(indices[i], offsets[i]) for i, e in enumerate(self.emb)], 1)
        z = torch.bmm(t, t.transpose(1, 2)).flatten(1)[:, self.pairs]
        return torch.sigmoid(self.top(torch.cat([x, z], 1)))


class LabelSmoothing(torch.nn.Module):
    def forward(self, logits, labels):
        k = logits.shape[1]
        eps = 0.1
        onehot = F.one_hot(labels, k).float()
        target = torch.full_like(logits, eps / (k - 1)).scatter_(1, labels.unsqueeze(1), 1 - eps)
        loss = -(target * F.log_softmax(logits, 1)).sum(1).mean()
        accuracy = (logits.argmax(1) == labels).float().mean()
        return loss, onehot, target, accuracy


class Confusion(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, logits, labels):
        pred = logits.argmax(1)
        cm = torch.zeros(self.k, self.k, dtype=torch.int64)
        cm.index_put_((labels, pred), torch.ones_like(labels), accumulate=True)
        diag = cm.flatten()[torch.arange(self.k) * (self.k + 1)]
        return cm, diag.float() / cm.sum(1).clamp(min=1).float()


class VoxelEncoder(torch.nn.Module):
    """A dynamic voxel encoder: voxel keys, torch.unique, per-voxel mean and max pooling."""

    def __init__(self, c, grid, voxel):
        super().__init__()
        self.grid, self.voxel = grid, voxel
        self.lin = torch.nn.Linear(7, c)
        self.c = c

    def forward(self, points):
        g = self.grid
        coords = torch.floor(points[:, :3] / self.voxel).long()
        key = (coords[:, 0].clamp(0, g[0] - 1) * g[1] + coords[:, 1].clamp(0, g[1] - 1)) * g[2] + coords[:, 2].clamp(0, g[2] - 1)
        keys, inverse = torch.unique(key, sorted=True, return_inverse=True)
        m = keys.shape[0]
        xyz = points[:, :3]
        mean = xyz.new_zeros(m, 3).scatter_reduce(0, inverse.unsqueeze(1).expand(-1, 3), xyz, "mean", include_self=False)
        f = F.relu(self.lin(torch.cat([points, xyz - mean[inverse]], 1)))
        pooled = f.new_zeros(m, self.c).scatter_reduce(0, inverse.unsqueeze(1).expand(-1, self.c), f, "amax", include_self=False)
        return keys, pooled


class AdaptivePools(torch.nn.Module):
    """A classifier head over adaptive pools to sizes the input does not divide, as VGG's
    and AlexNet's `AdaptiveAvgPool2d` and feature-pyramid code write them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * (5 * 7 + 3 * 3), 10)

    def forward(self, x):
        f = F.relu(self.conv(x))
        a = F.adaptive_avg_pool2d(f, (5, 7))
        m = F.adaptive_max_pool2d(f, 3)
        return self.fc(torch.cat([a.flatten(1), m.flatten(1)], 1)), a


def save(out, name, model, example, input_names):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = model.eval()
    with torch.no_grad():
        ovm = ov.convert_model(model, example_input=example)
        ref = model(*example) if isinstance(example, tuple) else model(**example)
    xml = os.path.join(d, "model.xml")
    ov.save_model(ovm, xml, compress_to_fp16=False)
    values = []

    def leaves(x):
        if isinstance(x, torch.Tensor):
            values.append(x)
        elif isinstance(x, (tuple, list)):
            for y in x:
                leaves(y)
        elif isinstance(x, dict):
            for y in x.values():
                leaves(y)

    leaves(example)
    inputs = {}
    for inp, v in zip(ov.Core().read_model(xml).inputs, values):
        inputs[inp.get_any_name()] = v.numpy()
    np.savez(os.path.join(d, "inputs.npz"), **inputs)
    expected = openvino_expected(xml, inputs)
    np.savez(os.path.join(d, "expected.npz"), **expected)
    flat = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            flat.append(x.numpy())
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif hasattr(x, "to_legacy_cache"):  # transformers' DynamicCache
            walk(x.to_legacy_cache())
        elif hasattr(x, "to_tuple"):
            walk(x.to_tuple())
        elif hasattr(x, "values"):
            walk(list(x.values()))
    walk(ref)
    np.savez(os.path.join(d, "torch.npz"), **{f"output_{i}": v for i, v in enumerate(flat)})
    print("wrote", d, {k: v.shape for k, v in expected.items()})


class CachedLM(torch.nn.Module):
    """A causal LM with its KV cache as flat inputs and outputs (key, value per layer), the
    form optimum-intel gives OpenVINO's converter. Needs transformers 4.46 (as gpt2 does):
    4.57's mask building does not trace."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask, *past):
        cache = tuple(zip(past[::2], past[1::2]))
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        present = out.past_key_values
        if hasattr(present, "to_legacy_cache"):
            present = present.to_legacy_cache()
        return (out.logits, *[t for layer in present for t in layer])


def graph(rng, nodes, edges):
    return torch.tensor(rng.integers(0, nodes, (2, edges)), dtype=torch.int64)


def model_set(full):
    """(name, model, example inputs) for every model of the set, reduced unless `full`."""
    r = np.random.default_rng(23)
    f32 = lambda *shape: torch.tensor(r.standard_normal(shape), dtype=torch.float32)  # noqa: E731
    if full:  # reduced ones are in models/converted (tools/convert_torch_models.py)
        from convert_torch_models import GCN, SageMean

        yield "gcn", GCN(64, 64, 16), (f32(50000, 64), graph(r, 50000, 500000))
        yield "sage_mean", SageMean(), (f32(50000, 64), graph(r, 50000, 500000))
    yield "gat", GAT(64, 4, 16) if full else GAT(16, 4, 8), (
        (f32(20000, 64), graph(r, 20000, 200000)) if full else (f32(32, 16), graph(r, 32, 128)))

    c, h, w, pillars, points = (64, 256, 256, 12000, 32) if full else (16, 32, 32, 200, 8)
    cells = torch.tensor(r.choice(h * w, pillars, replace=False), dtype=torch.int64)
    yield "pointpillars", PointPillars(c, h, w), (f32(pillars, points, 9), torch.stack([cells // w, cells % w], 1))

    yield "moe", MoE(256, 512, 8) if full else MoE(32, 64, 4), (f32(512, 256) if full else f32(24, 32),)

    yield "fno", FNO(32, 16, 16) if full else FNO(8, 6, 5), (f32(4, 32, 64, 64) if full else f32(2, 8, 16, 16),)

    rows, tables, dim, batch = (100000, 8, 32, 256) if full else (200, 4, 8, 6)
    lengths = r.integers(0, 6, (tables, batch))
    offsets = np.concatenate([np.zeros((tables, 1), np.int64), np.cumsum(lengths, 1)[:, :-1]], 1)
    total = int(lengths.sum(1).max())
    indices = r.integers(0, rows, (tables, total))
    yield "dlrm", DLRM(rows, tables, dim), (f32(batch, 13), torch.tensor(indices), torch.tensor(offsets))

    n, k = (8192, 100) if full else (16, 5)
    yield "label_smoothing", LabelSmoothing(), (f32(n, k), torch.tensor(r.integers(0, k, n)))

    n, k = (1000000, 100) if full else (64, 6)
    yield "confusion", Confusion(k), (f32(n, k), torch.tensor(r.integers(0, k, n)))

    n, c, grid = (200000, 32, (160, 160, 8)) if full else (300, 8, (8, 8, 4))
    pts = np.concatenate([r.uniform(0, 1, (n, 3)) ** 2 * np.array(grid) * 0.5, r.uniform(0, 1, (n, 1))], 1)
    yield "voxel", VoxelEncoder(c, grid, 0.5), (torch.tensor(pts, dtype=torch.float32),)


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--full", action="store_true", help="full-size variants of the model set, for benchmarks")
    ap.add_argument("--only", nargs="+", help="convert these models only")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or os.path.join(here, "out", "real_full" if args.full else "real")
    wanted = lambda name: args.only is None or name in args.only  # noqa: E731
    if not args.full:
        dense(out, wanted)
    for name, model, example in model_set(args.full):
        if wanted(name):
            save(out, name, model, example, None)


def dense(out, wanted):
    """The torchvision and transformers models (built first, so their seeds are as before)."""
    img = torch.randn(1, 3, 224, 224)
    resnet18 = torchvision.models.resnet18(weights=None)
    mobilenet_v3 = torchvision.models.mobilenet_v3_small(weights=None)
    if wanted("resnet18"):
        save(out, "resnet18", resnet18, (img,), ["x"])
    if wanted("mobilenet_v3"):
        save(out, "mobilenet_v3", mobilenet_v3, (img,), ["x"])

    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    bert = BertModel(BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                                vocab_size=1000, max_position_embeddings=64))
    ids = torch.tensor(rng.integers(0, 1000, (1, 32)), dtype=torch.int64)
    if wanted("bert"):
        save(out, "bert", bert, {"input_ids": ids, "attention_mask": torch.ones(1, 32, dtype=torch.int64)}, None)

    cfg = GPT2Config(n_embd=128, n_layer=2, n_head=2, vocab_size=1000, n_positions=64)
    gpt2 = GPT2LMHeadModel(cfg)
    gpt2.config.use_cache = False
    ids = torch.tensor(rng.integers(0, 1000, (1, 16)), dtype=torch.int64)
    try:
        if wanted("gpt2"):
            save(out, "gpt2", gpt2, {"input_ids": ids}, None)
        if wanted("gpt2_kv"):
            # The next 4 tokens after 16 cached ones: the cache goes in and comes out, as
            # OpenVINO's non-stateful LLM exports take it.
            gpt2.config.use_cache = True
            past = [torch.randn(1, 2, 16, 64) for _ in range(2 * cfg.n_layer)]
            new = torch.tensor(rng.integers(0, 1000, (1, 4)), dtype=torch.int64)
            save(out, "gpt2_kv", CachedLM(gpt2), (new, torch.ones(1, 20, dtype=torch.int64), *past), None)
    except Exception as e:  # transformers 5.x's GPT-2 uses aten::diff, which OpenVINO cannot convert
        print("gpt2 not converted:", str(e).splitlines()[-1])

    # Built last, so the models above keep their seeds.
    swin = torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
        num_classes=10)
    if wanted("swin"):
        save(out, "swin", swin, (torch.randn(1, 3, 32, 32),), ["x"])
    if wanted("adaptive_pools"):
        save(out, "adaptive_pools", AdaptivePools(), (torch.randn(2, 3, 23, 30),), ["x"])


if __name__ == "__main__":
    main()
