#!/usr/bin/env python3
"""Exports two models with dynamic axes to ONNX, for `gcomp build --max-shape` (issue 27).

- resnet_dyn: a ResNet-18-shaped network (torchvision's BasicBlock, [2, 2, 2, 2] blocks) with
  widths 4, 8, 16, 32 instead of 64..512, so the committed file stays small (ResNet-18 itself is
  45 MB), over 3x32x32 images with a symbolic batch ("batch"). torch.flatten after the pooling
  is exported as torch does for ResNet-18; the model also reshapes with x.view(x.size(0), -1),
  which torch exports as Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
- seq_attn: one pre-norm transformer block (causal-free self-attention over 2 heads, an MLP)
  over [2, seq, 16] with a symbolic sequence ("seq"), its heads split with
  x.view(B, T, H, C // H) on x.size().

Random weights (torch.manual_seed(0); nothing is downloaded). For each model the script writes
NAME_opset13.onnx and, for each size in SIZES, the input it ran (NAME_sizeN/x.npy) and PyTorch's
float32 output (NAME_sizeN/y.npy), so one build can be checked at every size.

Usage: /usr/bin/python3 scripts/export_dynamic.py frontend/onnx/suite/testdata/dynamic
Needs Debian's python3-torch, python3-torchvision and python3-onnx.
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn
from torchvision.models.resnet import BasicBlock


class SmallResNet(nn.Module):
    def __init__(self, widths=(4, 8, 16, 32), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or cin != w:
                down = nn.Sequential(nn.Conv2d(cin, w, 1, stride, bias=False), nn.BatchNorm2d(w))
            layers += [BasicBlock(cin, w, stride, down), BasicBlock(w, w)]
            cin = w
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        h = self.pool(self.layers(self.stem(x)))
        h = torch.flatten(h, 1)
        h = h.view(h.size(0), -1)  # Shape -> Gather -> Unsqueeze -> Concat -> Reshape
        return self.fc(h)


class SeqBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads)), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


# name: (model, shape at export, dynamic axis, its name, sizes checked)
MODELS = {
    "resnet_dyn": (SmallResNet, (2, 3, 32, 32), 0, "batch", (1, 3, 8)),
    "seq_attn": (SeqBlock, (2, 8, 16), 1, "seq", (1, 7, 512)),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (make, shape, axis, dim, sizes) in MODELS.items():
        torch.manual_seed(0)
        model = make()
        for p in model.modules():  # BatchNorm statistics other than 0 and 1
            if isinstance(p, nn.BatchNorm2d):
                p.running_mean.uniform_(-0.5, 0.5)
                p.running_var.uniform_(0.5, 1.5)
        model.eval()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
        path = os.path.join(out, name + "_opset13.onnx")
        torch.onnx.export(model, (x,), path, opset_version=13, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {axis: dim}, "y": {axis: dim}}, do_constant_folding=True)
        print(path, os.path.getsize(path))
        for n in sizes:
            s = list(shape)
            s[axis] = n
            x = torch.randn(s, generator=torch.Generator().manual_seed(n))
            with torch.no_grad():
                y = model(x)
            d = os.path.join(out, "%s_size%d" % (name, n))
            os.makedirs(d, exist_ok=True)
            np.save(os.path.join(d, "x.npy"), x.numpy())
            np.save(os.path.join(d, "y.npy"), y.numpy())


if __name__ == "__main__":
    main()
