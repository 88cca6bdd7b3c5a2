#!/usr/bin/env python3
"""Exports a decoding step that grows its KV cache inside the graph to ONNX, for
`gcomp build --max-shape` (issue 27: a concat along a symbolic dim).

decoder_past: one pre-norm transformer decoder layer (2 heads of 8, an MLP) over one token
x [1, 1, 16] with past_key_values past_k, past_v [1, 2, past, 8] ("past" a dynamic axis): the
step's keys and values are appended by torch.cat along the length, present_k = cat(past_k, k),
and the query attends to all past+1 keys (no mask is needed for the last row). Outputs y,
present_k and present_v, as decoders exported with use_cache do.

Random weights (torch.manual_seed(0); nothing is downloaded). Writes decoder_past_opset13.onnx
and, for each past length in SIZES, the inputs it ran (decoder_past_pastN/{x,past_k,past_v}.npy)
and PyTorch's float32 outputs (y, present_k, present_v .npy), so one build is checked at every
length.

Usage: /usr/bin/python3 scripts/export_dynamic_past.py frontend/onnx/suite/testdata/dynamic
Needs Debian's python3-torch and python3-onnx.
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

D, HEADS, SIZES = 16, 2, (1, 13, 63)


class DecoderStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x, past_k, past_v):
        hd = D // HEADS
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(1, 1, HEADS, hd).transpose(1, 2) for t in (q, k, v))
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(1, 1, D))
        return x + self.mlp(self.ln2(x)), k, v


def inputs(past, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn((1, 1, D), generator=g), torch.randn((1, HEADS, past, D // HEADS), generator=g),
            torch.randn((1, HEADS, past, D // HEADS), generator=g))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = DecoderStep().eval()
    path = os.path.join(out, "decoder_past_opset13.onnx")
    axes = {n: {2: "past"} for n in ("past_k", "past_v")}
    axes.update({n: {2: "past_plus_1"} for n in ("present_k", "present_v")})
    torch.onnx.export(model, inputs(4, 1), path, opset_version=13,
                      input_names=["x", "past_k", "past_v"], output_names=["y", "present_k", "present_v"],
                      dynamic_axes=axes, do_constant_folding=True)
    print(path, os.path.getsize(path))
    for n in SIZES:
        xs = inputs(n, n)
        with torch.no_grad():
            ys = model(*xs)
        d = os.path.join(out, "decoder_past_past%d" % n)
        os.makedirs(d, exist_ok=True)
        for name, t in zip(("x", "past_k", "past_v", "y", "present_k", "present_v"), xs + ys):
            np.save(os.path.join(d, name + ".npy"), t.numpy())


if __name__ == "__main__":
    main()
