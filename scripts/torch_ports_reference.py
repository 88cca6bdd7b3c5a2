#!/usr/bin/env python3
"""PyTorch's values for the line-by-line ports in testdata/ports (examples/ports_test.go).

For each port this builds PyTorch's own model - torchvision's resnet18, and a small ViT written
the usual way over nn.TransformerEncoderLayer with the default dropout=0.1 - loads the weights
gcomp wrote with `gcomp init-weights` using load_state_dict(strict=True), runs it in eval mode in
float64 on the inputs gcomp used (`gcomp run --save-inputs`) and writes:

  OUT_DIR/logits.npy       the output
  OUT_DIR/state_dict.txt   every key of the model's full state_dict with its dtype and shape,
                           which the Go test matches against the port's parameters
  STATE_DICT.safetensors   the model's full state_dict as PyTorch holds it (num_batches_tracked
                           included), which scripts/torch_reference.sh loads back into
                           gcomp under --strict

Usage: torch_ports_reference.py MODEL WEIGHTS.safetensors INPUT_DIR OUT_DIR STATE_DICT.safetensors
Needs Debian's python3-torch, python3-torchvision and python3-numpy.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

from torch_layers_reference import write_safetensors
from torch_reference import read_safetensors

torch.set_default_dtype(torch.float32)  # torch_layers_reference makes float64 the default


class ViT(nn.Module):
    def __init__(self, image=32, patch=8, dim=64, depth=2, heads=4, mlp_dim=128, num_classes=10):
        super().__init__()
        n = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        self.pos_drop = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(dim, heads, mlp_dim, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.pos_drop(x)
        x = self.encoder(x)
        x = self.norm(x)
        return self.head(x[:, 0])


MODELS = {
    "resnet": lambda: torchvision.models.resnet18(num_classes=10),
    "vit": ViT,
}

GCOMP_DTYPES = {torch.float32: "f32", torch.int64: "i64"}


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    name, weights, in_dir, out_dir, state_out = sys.argv[1:]
    torch.manual_seed(0)
    model = MODELS[name]()
    model.load_state_dict(read_safetensors(weights), strict=True)
    state = model.state_dict()
    write_safetensors(state_out, dict(state), {"source": "torch " + torch.__version__})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "state_dict.txt"), "w") as f:
        for k, v in state.items():
            f.write("%s %s[%s]\n" % (k, GCOMP_DTYPES[v.dtype], ",".join(map(str, v.shape))))
    model = model.double().eval()
    x = torch.from_numpy(np.load(os.path.join(in_dir, "x.npy"))).double()
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(out_dir, "logits.npy"), y.numpy().astype(np.float64))


if __name__ == "__main__":
    main()
