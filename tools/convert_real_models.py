#!/usr/bin/env python3
"""Converts real PyTorch models (random weights, nothing downloaded) with OpenVINO's own
converter and records, next to each model.xml: inputs.npz, expected.npz (OpenVINO CPU with
INFERENCE_PRECISION_HINT=f32) and torch.npz (eager PyTorch), for `tools/check_real_models.py`
to compare irun with. Full-size models stay out of the repository (tools/out/real).

  resnet18        torchvision ResNet-18, 1x3x224x224
  mobilenet_v3    torchvision MobileNetV3-small, 1x3x224x224
  bert            transformers BertModel, 2 layers, hidden 128, 2 heads, sequence 32
  gpt2            transformers GPT2LMHeadModel, 2 layers, hidden 128, 2 heads, sequence 16

    python3 -m venv venv && venv/bin/pip install openvino numpy torch torchvision "transformers<5"
    venv/bin/python tools/convert_real_models.py [OUT_DIR]      # default tools/out/real
"""
import os
import sys

import numpy as np
import openvino as ov
import torch
import torchvision

torch.manual_seed(0)
rng = np.random.default_rng(11)


def save(out, name, model, example, input_names):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = model.eval()
    with torch.no_grad():
        ovm = ov.convert_model(model, example_input=example)
        ref = model(*example) if isinstance(example, tuple) else model(**example)
    xml = os.path.join(d, "model.xml")
    ov.save_model(ovm, xml, compress_to_fp16=False)
    values = list(example) if isinstance(example, tuple) else list(example.values())
    inputs = {}
    for inp, v in zip(ov.Core().read_model(xml).inputs, values):
        inputs[inp.get_any_name()] = v.numpy()
    np.savez(os.path.join(d, "inputs.npz"), **inputs)
    core = ov.Core()
    compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(inputs)
    expected = {}
    for i, o in enumerate(compiled.outputs):
        names = sorted(o.get_names())
        expected[names[0] if names else f"output_{i}"] = np.asarray(result[o])
    np.savez(os.path.join(d, "expected.npz"), **expected)
    flat = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            flat.append(x.numpy())
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif hasattr(x, "to_tuple"):
            walk(x.to_tuple())
        elif hasattr(x, "values"):
            walk(list(x.values()))
    walk(ref)
    np.savez(os.path.join(d, "torch.npz"), **{f"output_{i}": v for i, v in enumerate(flat)})
    print("wrote", d, {k: v.shape for k, v in expected.items()})


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "real")
    img = torch.randn(1, 3, 224, 224)
    save(out, "resnet18", torchvision.models.resnet18(weights=None), (img,), ["x"])
    save(out, "mobilenet_v3", torchvision.models.mobilenet_v3_small(weights=None), (img,), ["x"])

    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    bert = BertModel(BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                                vocab_size=1000, max_position_embeddings=64))
    ids = torch.tensor(rng.integers(0, 1000, (1, 32)), dtype=torch.int64)
    save(out, "bert", bert, {"input_ids": ids, "attention_mask": torch.ones(1, 32, dtype=torch.int64)}, None)

    cfg = GPT2Config(n_embd=128, n_layer=2, n_head=2, vocab_size=1000, n_positions=64)
    gpt2 = GPT2LMHeadModel(cfg)
    gpt2.config.use_cache = False
    ids = torch.tensor(rng.integers(0, 1000, (1, 16)), dtype=torch.int64)
    try:
        save(out, "gpt2", gpt2, {"input_ids": ids}, None)
    except Exception as e:  # transformers 5.x's GPT-2 uses aten::diff, which OpenVINO cannot convert
        print("gpt2 not converted:", str(e).splitlines()[-1])


if __name__ == "__main__":
    main()
