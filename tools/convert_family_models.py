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

    python3 -m venv venv && venv/bin/pip install openvino numpy torch torchvision onnx
    venv/bin/python tools/convert_family_models.py [OUT_DIR [NAME ...]]   # default tools/out/families
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


def scripted_decoder(out, name):
    """The decoder through torch.jit.script, so that its loop and branch stay control flow."""
    model = torch.jit.script(GreedyDecoder().eval())
    h0 = torch.randn(1, 16)
    save(out, name, model, (h0, torch.tensor(9)), None)


def scan_through_onnx(out, name):
    """ScanRNN exported to ONNX with its loop rolled into a Scan, converted by OpenVINO."""
    import onnx
    from onnx import TensorProto, helper

    rnn = ScanRNN().eval()
    x = torch.randn(5, 2, 4)
    h0 = torch.randn(2, 6)
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
        [helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2, 6])],
        [onnx.numpy_helper.from_array(w.T.copy(), "wt"), onnx.numpy_helper.from_array(b, "b"),
         onnx.numpy_helper.from_array(u.T.copy(), "ut")],
    )
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], body=body, num_scan_inputs=1)],
        "scan_rnn",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, 4])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [5, 2, 6])],
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
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "out", "families")
    r = np.random.default_rng(5)
    only = set(sys.argv[2:])
    wanted = lambda name: not only or name in only  # noqa: E731
    if wanted("detector"):
        save(out, "detector", Detector(), (torch.randn(1, 3, 32, 32),), None)
    if wanted("segmenter"):
        save(out, "segmenter", Segmenter(), (torch.randn(1, 3, 32, 32),), None)
    if wanted("roi_head"):
        boxes = torch.tensor(np.sort(r.uniform(0, 30, (6, 2, 2)), axis=1).reshape(6, 4), dtype=torch.float32)
        save(out, "roi_head", RoiHead(), (torch.randn(1, 3, 32, 32), boxes), None)
    if wanted("greedy_decoder"):
        scripted_decoder(out, "greedy_decoder")
    if wanted("scan_rnn"):
        scan_through_onnx(out, "scan_rnn")


if __name__ == "__main__":
    main()
