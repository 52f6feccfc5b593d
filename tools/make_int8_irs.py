#!/usr/bin/env python3
"""NNCF INT8 networks as they ship: torchvision ResNet-18 and MobileNetV3-small (random
weights, seeded) converted by OpenVINO and quantized by `nncf.quantize` (OpenVINO backend,
its default PERFORMANCE preset: FakeQuantize-1 on activations, the weights compressed to i8
with a scale, Const -> Convert -> [Subtract] -> Multiply), with inputs and OpenVINO CPU's
outputs (f32 inference precision; its int8 kernels run, LPT) as goldens:

    venv/bin/pip install openvino nncf torch torchvision
    venv/bin/python tools/make_int8_irs.py models/int8 --only mobilenet_v3_int8   # committed
    venv/bin/python tools/make_int8_irs.py tools/out/int8                        # both

Each directory: model.xml/.bin, inputs.npz, expected.npz (OpenVINO CPU, its int8 kernels),
and emulated.npz: OpenVINO CPU with its low-precision transformations off, every
FakeQuantize an f32 op and every layer in f32, which is what the spec defines and irun
computes. The two differ by far more than rounding: a FakeQuantize level is a step function,
so wherever two implementations' f32 results straddle a rounding boundary (a few elements in
a million per layer) the level differs by one, and each such flip spreads through the layers
after it. The script prints the spread between OpenVINO's two executions; tests/int8.rs
requires irun to be within it of the f32 one, with the same top class.
"""
import argparse
import os
import sys

import numpy as np
import openvino as ov
import torch
import torchvision

from ov_expected import openvino_expected


def calibration(n, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 3, 224, 224, generator=g).numpy() for _ in range(n)]


def recalibrate(model):
    """Batch-norm statistics measured on random images: a random-initialised MobileNetV3
    otherwise shrinks its activations to 1e-9 by the last layer (its f32 outputs are all but
    zero, its quantized ones exactly zero), which would test nothing."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, 3, 224, 224, generator=g))
    return model.eval()


def build(out, name, model):
    import nncf

    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = recalibrate(model)
    img = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        ovm = ov.convert_model(model, example_input=(img,))
    data = calibration(16, 11)
    quantized = nncf.quantize(ovm, nncf.Dataset(data), subset_size=len(data))
    xml = os.path.join(d, "model.xml")
    ov.save_model(quantized, xml, compress_to_fp16=False)
    name_in = ov.Core().read_model(xml).inputs[0].get_any_name()
    inputs = {name_in: img.numpy()}
    np.savez(os.path.join(d, "inputs.npz"), **inputs)
    expected = openvino_expected(xml, inputs)
    np.savez(os.path.join(d, "expected.npz"), **expected)
    core = ov.Core()
    # Low-precision transformations off: FakeQuantize runs as the f32 op it is specified as,
    # every layer in f32.
    compiled = core.compile_model(core.read_model(xml), "CPU", {
        "INFERENCE_PRECISION_HINT": "f32", "LP_TRANSFORMS_MODE": False})
    emulated = {k: np.asarray(v) for k, v in zip(expected, compiled(inputs).values())}
    np.savez(os.path.join(d, "emulated.npz"), **emulated)
    fq = sum(op.get_type_name() == "FakeQuantize" for op in core.read_model(xml).get_ops())
    for k in expected:
        diff = np.abs(expected[k] - emulated[k]).max()
        print(f"{name}: {fq} FakeQuantize, output {k} {expected[k].shape}, "
              f"|OpenVINO int8 - OpenVINO f32| max {diff:.3g} (|output| max "
              f"{np.abs(expected[k]).max():.3g}), top class {np.argmax(expected[k])} / "
              f"{np.argmax(emulated[k])}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--only", action="append")
    args = p.parse_args()
    torch.manual_seed(0)
    models = {
        "resnet18_int8": lambda: torchvision.models.resnet18(weights=None),
        "mobilenet_v3_int8": lambda: torchvision.models.mobilenet_v3_small(weights=None),
    }
    for name, make in models.items():
        if args.only is None or name in args.only:
            torch.manual_seed(0)
            build(args.out, name, make())


if __name__ == "__main__":
    sys.exit(main())
