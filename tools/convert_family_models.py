#!/usr/bin/env python3
"""Converts small PyTorch models of the families people ship, with OpenVINO's own converter,
and records inputs.npz, expected.npz (OpenVINO CPU, f32 precision) and torch.npz (eager
PyTorch) next to each model.xml, as tools/convert_real_models.py does (random weights, nothing
downloaded). The committed copies are under models/real.

  detector        an FPN with nearest upsampling, per-anchor boxes and scores, TopK, then
                  torchvision's NMS (Interpolate-11, TopK-11, NonMaxSuppression-9)
  segmenter       a U-Net: GroupNorm, a strided convolution, a transposed one, reflect
                  padding, pixel_shuffle, a cumulative sum, softmax and argmax over channels
  roi_head        a two-stage detector head: roi_align on a feature map, grid_sample of it
                  through an affine grid, a linear classifier (ROIAlign-9, GridSample-9)
  greedy_decoder  a torch.jit.script greedy decoder: a `for` loop over the steps, an `if` that
                  pads the sequence after the end token, the tokens growing by one a step
                  (Loop-5 with an If-8 inside)
  scan_rnn        a recurrent cell written as a Python loop over time steps and exported
                  through ONNX, whose Scan OpenVINO reads as a TensorIterator-1

Each has two sizes: the default writes the small variants committed under models/real (a
32x32 image, 8 channels, 6 boxes, 9 steps of a 12-token vocabulary, 5 steps of 2 x 4);
`--full` writes benchmark sizes to tools/out/families_full for tools/bench_models.py (a
320x320 image, 32 channels, 100 boxes, 32 steps of 4000 tokens with 512 units, 128 steps of
16 x 256 into 256 units).

    python3 -m venv venv && venv/bin/pip install openvino numpy torch torchvision onnx
    venv/bin/python tools/convert_family_models.py [OUT_DIR] [--full] [--only NAME ...]
"""
import os
import sys

import numpy as np
import openvino as ov
import torch
import torchvision

from convert_real_models import save
from ov_expected import openvino_expected

torch.manual_seed(7)
F = torch.nn.functional


class Detector(torch.nn.Module):
    """Two backbone stages, a top-down FPN merge with nearest upsampling, a head giving a box
    and a score per anchor, the 64 best by TopK, then NMS at IoU 0.3."""

    def __init__(self, c=8):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, c, 3, 2, 1)
        self.down = torch.nn.Conv2d(c, 2 * c, 3, 2, 1)
        self.lateral = torch.nn.Conv2d(c, 2 * c, 1)
        self.head = torch.nn.Conv2d(2 * c, 5, 3, 1, 1)

    def forward(self, image):
        c1 = F.relu(self.stem(image))
        c2 = F.relu(self.down(c1))
        p1 = self.lateral(c1) + F.interpolate(c2, scale_factor=2.0, mode="nearest")
        out = self.head(p1)  # [1, 5, h, w]: score logit, then a box around the cell
        n, _, h, w = out.shape
        out = out.flatten(2).transpose(1, 2)[0]  # [h*w, 5]
        ys = torch.arange(h, dtype=torch.float32).repeat_interleave(w)
        xs = torch.arange(w, dtype=torch.float32).repeat(h)
        centre = torch.stack([xs, ys, xs, ys], 1) * 4.0
        boxes = centre + torch.tanh(out[:, 1:]) * 6.0 + torch.tensor([-4.0, -4.0, 4.0, 4.0])
        scores = torch.sigmoid(out[:, 0])
        top, idx = scores.topk(64)
        keep = torchvision.ops.nms(boxes[idx], top, 0.3)
        return boxes[idx][keep], top[keep]


class Segmenter(torch.nn.Module):
    """A small U-Net: GroupNorm, down by a strided convolution, up by a transposed one, a
    skip concatenation, reflect-padded convolution, pixel_shuffle to full resolution, and a
    cumulative sum down the rows; class probabilities and the argmax over channels."""

    def __init__(self, c=8, classes=5):
        super().__init__()
        self.enc = torch.nn.Conv2d(3, c, 3, 1, 1)
        self.norm = torch.nn.GroupNorm(2, c)
        self.down = torch.nn.Conv2d(c, 2 * c, 3, 2, 1)
        self.up = torch.nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.mix = torch.nn.Conv2d(2 * c, 4 * classes, 3, 2, 1, padding_mode="reflect")

    def forward(self, image):
        e = F.relu(self.norm(self.enc(image)))
        d = F.relu(self.down(e))
        u = torch.cat([self.up(d), e], 1)
        logits = F.pixel_shuffle(self.mix(u), 2)
        logits = logits + 0.1 * torch.cumsum(logits, 2)
        return F.softmax(logits, 1), logits.argmax(1)


class RoiHead(torch.nn.Module):
    """The second stage of a detector: 7x7 roi_align per box (aligned, two samples a side),
    a learned affine warp of each crop by grid_sample (bilinear, zero padding), a classifier."""

    def __init__(self, c=8, classes=4):
        super().__init__()
        self.backbone = torch.nn.Conv2d(3, c, 3, 2, 1)
        self.theta = torch.nn.Linear(c * 49, 6)
        self.cls = torch.nn.Linear(c * 49, classes)

    def forward(self, image, boxes):
        feats = F.relu(self.backbone(image))
        crops = torchvision.ops.roi_align(feats, [boxes], output_size=7, spatial_scale=0.5,
                                          sampling_ratio=2, aligned=True)
        theta = torch.tanh(self.theta(crops.flatten(1))).view(-1, 2, 3) * 0.2 + torch.tensor(
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        # affine_grid written out (OpenVINO has no conversion rule for it): the crop's
        # normalised pixel centres, mapped through theta.
        k, _, h, w = crops.shape
        ys = (torch.arange(h, dtype=torch.float32) * 2 + 1) / h - 1
        xs = (torch.arange(w, dtype=torch.float32) * 2 + 1) / w - 1
        base = torch.stack([xs.repeat(h), ys.repeat_interleave(w), torch.ones(h * w)], 1)  # [h*w, 3]
        grid = torch.matmul(base, theta.transpose(1, 2)).view(k, h, w, 2)
        warped = F.grid_sample(crops, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return self.cls(warped.flatten(1)), warped


class GreedyDecoder(torch.nn.Module):
    """A greedy decoder: h = tanh(W h + E[token]); the next token is the argmax of U h; once
    the end token has come, every later token is padding (0). The tokens grow by one per
    step (a back edge whose shape changes every iteration)."""

    def __init__(self, vocab=12, hidden=16, end=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.w = torch.nn.Linear(hidden, hidden)
        self.u = torch.nn.Linear(hidden, vocab)
        self.end = end

    def forward(self, h, steps):
        token = torch.zeros(1, dtype=torch.int64)
        tokens = torch.zeros(0, dtype=torch.int64)
        done = torch.zeros(1, dtype=torch.bool)
        for _ in range(int(steps)):
            h = torch.tanh(self.w(h) + self.embed(token))
            token = self.u(h).argmax(-1)
            if bool(done):
                token = torch.zeros_like(token)
            else:
                done = token == self.end
            tokens = torch.cat([tokens, token])
        return tokens, h


class ScanRNN(torch.nn.Module):
    """h_t = tanh(W x_t + U h_{t-1}) over the time steps, every h_t kept."""

    def __init__(self, inputs=4, hidden=6):
        super().__init__()
        self.w = torch.nn.Linear(inputs, hidden)
        self.u = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x, h):
        outs = []
        for t in range(x.shape[0]):
            h = torch.tanh(self.w(x[t]) + self.u(h))
            outs.append(h)
        return torch.stack(outs), h


def scripted_decoder(out, name, full):
    """The decoder through torch.jit.script, so that its loop and branch stay control flow."""
    vocab, hidden, steps = (4000, 512, 32) if full else (12, 16, 9)
    model = torch.jit.script(GreedyDecoder(vocab, hidden).eval())
    h0 = torch.randn(1, hidden)
    save(out, name, model, (h0, torch.tensor(steps)), None)


def scan_through_onnx(out, name, full):
    """ScanRNN written as an ONNX Scan (the loop rolled, as ONNX exporters of recurrent
    code write it), converted by OpenVINO."""
    import onnx
    from onnx import TensorProto, helper

    steps, batch, inputs, hidden = (128, 16, 256, 256) if full else (5, 2, 4, 6)
    rnn = ScanRNN(inputs, hidden).eval()
    x = torch.randn(steps, batch, inputs)
    h0 = torch.randn(batch, hidden)
    w, b, u = (p.detach().numpy() for p in (rnn.w.weight, rnn.w.bias, rnn.u.weight))
    # The Scan body: h' = tanh(x W^T + b + h U^T), emitted per step and carried.
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["x_t", "wt"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["xwb"]),
            helper.make_node("MatMul", ["h_in", "ut"], ["hu"]),
            helper.make_node("Add", ["xwb", "hu"], ["pre"]),
            helper.make_node("Tanh", ["pre"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["y_t"]),
        ],
        "step",
        [helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [batch, hidden]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [batch, inputs])],
        [helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [batch, hidden]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [batch, hidden])],
        [onnx.numpy_helper.from_array(w.T.copy(), "wt"), onnx.numpy_helper.from_array(b, "b"),
         onnx.numpy_helper.from_array(u.T.copy(), "ut")],
    )
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], body=body, num_scan_inputs=1)],
        "scan_rnn",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [batch, hidden]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, inputs])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [batch, hidden]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [steps, batch, hidden])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx_path = os.path.join(d, "scan_rnn.onnx")
    onnx.save(m, onnx_path)
    xml = os.path.join(d, "model.xml")
    ov.save_model(ov.convert_model(onnx_path), xml, compress_to_fp16=False)
    os.remove(onnx_path)
    inputs = {"h0": h0.numpy(), "x": x.numpy()}
    np.savez(os.path.join(d, "inputs.npz"), **inputs)
    np.savez(os.path.join(d, "expected.npz"), **openvino_expected(xml, inputs))
    with torch.no_grad():
        ys, h = rnn(x, h0)
    np.savez(os.path.join(d, "torch.npz"), output_0=h.numpy(), output_1=ys.numpy())
    print("wrote", d)


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--full", action="store_true",
                    help="benchmark sizes (tools/out/families_full) instead of the committed ones")
    ap.add_argument("--only", nargs="+", help="convert these models only")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or os.path.join(here, "out", "families_full" if args.full else "families")
    wanted = lambda name: args.only is None or name in args.only  # noqa: E731
    r = np.random.default_rng(5)
    side, c = (320, 32) if args.full else (32, 8)
    if wanted("detector"):
        save(out, "detector", Detector(c), (torch.randn(1, 3, side, side),), None)
    if wanted("segmenter"):
        save(out, "segmenter", Segmenter(c), (torch.randn(1, 3, side, side),), None)
    if wanted("roi_head"):
        k = 100 if args.full else 6
        boxes = np.sort(r.uniform(0, side - 2, (k, 2, 2)), axis=1).reshape(k, 4)
        save(out, "roi_head", RoiHead(c), (torch.randn(1, 3, side, side), torch.tensor(boxes, dtype=torch.float32)),
             None)
    if wanted("greedy_decoder"):
        scripted_decoder(out, "greedy_decoder", args.full)
    if wanted("scan_rnn"):
        scan_through_onnx(out, "scan_rnn", args.full)


if __name__ == "__main__":
    main()
