#!/usr/bin/env python3
"""Converts torchvision's classification, segmentation, video and optical-flow models (random
weights, nothing downloaded) with OpenVINO's PyTorch converter, as their users ship them, and
writes each as a directory that tools/check_real_models.py compares irun with OpenVINO CPU on:
model.xml/.bin, inputs.npz (seeded random inputs), expected.npz (OpenVINO CPU, f32).

    venv/bin/pip install openvino numpy torch torchvision
    venv/bin/python tools/check_torchvision.py tools/out/torchvision [NAME ...]
    venv/bin/python tools/check_real_models.py tools/out/torchvision --irun target/release/irun

The models are large (VGG-11 alone is 530 MB), so they stay out of the repository. The
detection models are left out: their list-of-images inputs do not trace.
"""
import os
import sys
import warnings

import numpy as np
import openvino as ov
import torch
import torchvision.models as M

from ov_expected import openvino_expected

warnings.filterwarnings("ignore")

# (name, constructor, input shapes)
IMAGE = [(1, 3, 224, 224)]
MODELS = {
    **{n: (getattr(M, n), IMAGE) for n in [
        "alexnet", "vgg11", "googlenet", "inception_v3", "densenet121", "squeezenet1_1",
        "shufflenet_v2_x1_0", "mnasnet0_5", "efficientnet_b0", "regnet_y_400mf",
        "convnext_tiny", "maxvit_t", "swin_v2_t", "mobilenet_v2"]},
    **{f"seg_{n}": (getattr(M.segmentation, n), IMAGE) for n in [
        "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "fcn_resnet50"]},
    "vid_r3d_18": (M.video.r3d_18, [(1, 3, 8, 112, 112)]),
    "flow_raft_small": (M.optical_flow.raft_small, [(1, 3, 128, 128)] * 2),
}


def build(make):
    try:
        return make(weights=None, weights_backbone=None)
    except TypeError:
        return make(weights=None)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out", "torchvision")
    names = sys.argv[2:] or list(MODELS)
    rng = np.random.default_rng(5)
    torch.manual_seed(0)
    for name in names:
        make, shapes = MODELS[name]
        model = build(make).eval()
        example = tuple(torch.randn(s) for s in shapes)
        with torch.no_grad():
            converted = ov.convert_model(model, example_input=example)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        xml = os.path.join(d, "model.xml")
        ov.save_model(converted, xml, compress_to_fp16=False)
        inputs = {i.get_any_name(): rng.standard_normal(s).astype(np.float32)
                  for i, s in zip(ov.Core().read_model(xml).inputs, shapes)}
        np.savez(os.path.join(d, "inputs.npz"), **inputs)
        np.savez(os.path.join(d, "expected.npz"), **openvino_expected(xml, inputs))
        print("wrote", d, flush=True)


if __name__ == "__main__":
    main()
