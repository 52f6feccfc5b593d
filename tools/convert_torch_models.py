#!/usr/bin/env python3
"""Convert realistic PyTorch models (random weights, nothing downloaded) to IR with OpenVINO and
record OpenVINO's view for tools/compare_info.py:

  resnet18      torchvision ResNet-18, f32 weights (compress_to_fp16=False) and the default
                compressed form (f16 Const + Convert)
  gcn           a two-layer GCN whose aggregation is scatter_add_ (ScatterElementsUpdate-12)
  sage_mean     GraphSAGE-style mean aggregation with scatter_reduce(mean, include_self=False)
  kv_cache      an index_copy_ KV-cache update
  big           a 150 MB model (ResNet-ish stack of wide Linear layers) for timing `irun info`

    venv/bin/pip install openvino numpy torch torchvision
    venv/bin/python tools/convert_torch_models.py [OUT_DIR]        # default tools/out/torch
"""
import json
import os
import sys

import openvino as ov
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_reader_goldens import ov_view  # noqa: E402

torch.manual_seed(0)


class GCN(torch.nn.Module):
    def __init__(self, fin=16, hidden=32, fout=8):
        super().__init__()
        self.l1 = torch.nn.Linear(fin, hidden)
        self.l2 = torch.nn.Linear(hidden, fout)

    def aggregate(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        out = torch.zeros_like(x)
        idx = dst.unsqueeze(1).expand(-1, x.shape[1])
        return out.scatter_add_(0, idx, x[src])

    def forward(self, x, edge_index):
        h = torch.relu(self.aggregate(self.l1(x), edge_index))
        return self.aggregate(self.l2(h), edge_index)


class SageMean(torch.nn.Module):
    def forward(self, x, edge_index):
        idx = edge_index[1].unsqueeze(1).expand(-1, x.shape[1])
        return torch.zeros_like(x).scatter_reduce(0, idx, x[edge_index[0]], reduce="mean", include_self=False)


class KvCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 4, 64, 16))

    def forward(self, k, pos):
        return self.cache.clone().index_copy_(2, pos, k)


class Big(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(2048, 2048) for _ in range(9))

    def forward(self, x):
        for l in self.layers:
            x = torch.relu(l(x))
        return x


def save(out, name, model, example, compress=False):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    ovm = ov.convert_model(model.eval(), example_input=example)
    xml = os.path.join(d, "model.xml")
    ov.save_model(ovm, xml, compress_to_fp16=compress)
    with open(os.path.join(d, "ov_view.json"), "w") as f:
        json.dump(ov_view(xml), f, sort_keys=True)
    print("wrote", d, os.path.getsize(os.path.join(d, "model.bin")), "bytes of weights")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "torch")
    r18 = torchvision.models.resnet18(weights=None)
    img = torch.randn(1, 3, 224, 224)
    save(out, "resnet18", r18, img)
    save(out, "resnet18_f16", r18, img, compress=True)
    x = torch.randn(10, 16)
    edges = torch.randint(0, 10, (2, 40))
    save(out, "gcn", GCN(), (x, edges))
    save(out, "sage_mean", SageMean(), (x, edges))
    save(out, "kv_cache", KvCache(), (torch.randn(1, 4, 2, 16), torch.tensor([3, 7])))
    save(out, "big", Big(), torch.randn(1, 2048))


if __name__ == "__main__":
    main()
