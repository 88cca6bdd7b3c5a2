#!/usr/bin/env python3
"""Exports the example models and torchvision's ResNet-18 and MobileNetV2 to ONNX.

Every model gets random weights (torch.manual_seed(0); nothing is downloaded) and is exported
with torch.onnx.export at each opset asked for, with a symbolic batch dimension ("batch") on
every input and output that has one. Beside each NAME_opsetN.onnx the script writes the inputs
it ran (NAME_inputs/INPUT.npy) and PyTorch's float32 outputs (NAME_outputs/OUTPUT.npy), so that
`gcomp run NAME_opsetN.onnx --shape ... --input ...` can be compared with PyTorch.

The vision models' height and width are symbolic too ("height", "width"), so that
`gcomp check` can run them on the simulator at a small size (--shape input=1x3x64x64).

Usage: export_onnx.py OUT_DIR [--opsets 13,17] [--models cnn,rnn,...,vit,resnet50]
The small exports are committed in frontend/onnx/suite/testdata/exported (mlp, rnn, lstm,
transformer, vit; attention and attention_additive at opsets 13-17), where TestExported checks
gcomp's outputs against PyTorch's and TestExportedAttention that the attention pass finds them.
Needs Debian's python3-torch, python3-torchvision and python3-onnx (apt-get install them).
The example models' definitions are scripts/torch_reference.py's.
"""
import argparse
import contextlib
import os
import sys

import math

import numpy as np
import torch
from torch import nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as tr  # noqa: E402


class Tuple(torch.nn.Module):
    """Returns a dict-returning module's outputs as a tuple, in names' order."""

    def __init__(self, inner, names):
        super().__init__()
        self.inner, self.names = inner, names

    def forward(self, *args):
        out = self.inner(*args)
        return tuple(out[n] for n in self.names)


class AdditiveMaskAttention(tr.CausalSelfAttention):
    """Causal attention as many hand-written models spell it: a division by sqrt(d) and an
    additive float mask (0 or -inf) instead of a multiplication and masked_fill."""

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        bias = torch.zeros(T, T).masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1)) + bias
        y = torch.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class Single(nn.Module):
    """One module's output under one name, as the Tuple wrapper wants a dict."""

    def __init__(self, inner, name):
        super().__init__()
        self.inner, self.name = inner, name

    def forward(self, *args):
        return {self.name: self.inner(*args)}


# name: (module factory, [(input, shape, dtype, batch dim or None)], [outputs], [(output, batch dim)])
EXAMPLES = {
    "cnn": (tr.CNN, [("x", (64, 3, 28, 28), torch.float32, 0)], ["logits"], [0]),
    "rnn": (tr.RNN, [("input", (1, 57), torch.float32, 0), ("hidden", (1, 128), torch.float32, 0)],
            ["output", "hidden_next"], [0, 0]),
    "lstm": (tr.LSTM, [("x", (4, 10, 16), torch.float32, 0), ("h0", (2, 4, 32), torch.float32, 1),
                       ("c0", (2, 4, 32), torch.float32, 1)], ["out", "h_n", "c_n"], [0, 1, 1]),
    "transformer": (lambda: tr.Wrapped(tr.transformer(), "y"), [("src", (2, 16, 64), torch.float32, 0)], ["y"], [0]),
    "gpt": (tr.GPT, [("tokens", (1, 64), torch.int64, 0)], ["logits"], [0]),
    "mlp": (tr.MLP, [("x", (16, 64), torch.float32, 0)], ["y"], [0]),
    # Attention written out (matmul, scale, mask, softmax, matmul with the heads' reshapes and
    # transposes around it), which the attention pass must find at every opset 13-17.
    "attention": (lambda: Single(tr.CausalSelfAttention(64, 4), "y"), [("x", (2, 16, 64), torch.float32, 0)],
                  ["y"], [0]),
    "attention_additive": (lambda: Single(AdditiveMaskAttention(64, 4), "y"),
                           [("x", (2, 16, 64), torch.float32, 0)], ["y"], [0]),
}
VISION = {
    "resnet18": torchvision.models.resnet18,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "resnet50": torchvision.models.resnet50,  # 100 MB; only when asked for (--models resnet50)
}


def small_vit():
    """A small ViT (torchvision's VisionTransformer): 32x32 images in 8x8 patches, 2 layers."""
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                hidden_dim=32, mlp_dim=64, num_classes=10)


def tril_by_compare(x, diagonal=0):
    """torch.tril as a comparison of positions (PyTorch 1.13 exports tril only from opset 14)."""
    r = torch.arange(x.shape[-2]).unsqueeze(-1)
    c = torch.arange(x.shape[-1]).unsqueeze(0)
    return torch.where(c - r <= diagonal, x, torch.zeros_like(x))


@contextlib.contextmanager
def exportable_tril(opset):
    """Below opset 14 torch.tril is exported through tril_by_compare (the same values)."""
    saved = torch.tril
    if opset < 14:
        torch.tril = tril_by_compare
    try:
        yield
    finally:
        torch.tril = saved


def export(name, model, inputs, out_names, out_batch, opsets, out_dir, spatial=False):
    model.eval()
    args = []
    for n, shape, dtype, _ in inputs:
        g = torch.Generator().manual_seed(1)
        if dtype == torch.int64:
            args.append(torch.randint(0, 512, shape, generator=g))
        else:
            args.append(torch.randn(shape, generator=g, dtype=dtype))
    with torch.no_grad():
        outs = model(*args)
    if torch.is_tensor(outs):
        outs = (outs,)
    in_dir, o_dir = os.path.join(out_dir, name + "_inputs"), os.path.join(out_dir, name + "_outputs")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(o_dir, exist_ok=True)
    for (n, *_), a in zip(inputs, args):
        np.save(os.path.join(in_dir, n + ".npy"), a.numpy())
    for n, o in zip(out_names, outs):
        np.save(os.path.join(o_dir, n + ".npy"), o.numpy())
    dyn = {n: {b: "batch"} for n, _, _, b in inputs if b is not None}
    if spatial:
        for n, *_ in inputs:
            dyn[n].update({2: "height", 3: "width"})
    dyn.update({n: {b: "batch"} for n, b in zip(out_names, out_batch) if b is not None})
    for opset in opsets:
        path = os.path.join(out_dir, "%s_opset%d.onnx" % (name, opset))
        try:
            with exportable_tril(opset):
                torch.onnx.export(model, tuple(args), path, opset_version=opset,
                                  input_names=[i[0] for i in inputs], output_names=out_names,
                                  dynamic_axes=dyn, do_constant_folding=True)
        except torch.onnx.errors.OnnxExporterError as e:
            print("%s: not exported: %s" % (path, str(e).splitlines()[0]))
            continue
        print(path, os.path.getsize(path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--opsets", default="13,17")
    ap.add_argument("--models", default=",".join(list(EXAMPLES) + ["vit", "resnet18", "mobilenet_v2"]))
    a = ap.parse_args()
    opsets = [int(o) for o in a.opsets.split(",")]
    os.makedirs(a.out_dir, exist_ok=True)
    for name in a.models.split(","):
        torch.manual_seed(0)
        if name in EXAMPLES:
            make, inputs, outs, out_batch = EXAMPLES[name]
            export(name, Tuple(make(), outs), inputs, outs, out_batch, opsets, a.out_dir)
        elif name == "vit":
            export(name, small_vit(), [("input", (2, 3, 32, 32), torch.float32, 0)], ["output"], [0],
                   opsets, a.out_dir)
        else:
            export(name, VISION[name](), [("input", (1, 3, 224, 224), torch.float32, 0)], ["output"], [0],
                   opsets, a.out_dir, spatial=True)


if __name__ == "__main__":
    main()
