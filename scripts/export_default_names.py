#!/usr/bin/env python3
"""Exports a small model with torch.onnx.export's default names, for gcomp's naming tests.

Without input_names and output_names PyTorch names the tensors after the ops that use or make
them: the input of nn.Linear is "onnx::Gemm_0" and the outputs are numbers ("4"), names an IR
identifier or a file name cannot be. The model is nn.Linear(2, 3) then ReLU, with a second
output (the Linear's) so both outputs carry PyTorch's numbered names. Beside model.onnx the
script writes the input it ran (x.npy) and PyTorch's outputs (y0.npy, y1.npy, in output order).

Usage: export_default_names.py OUT_DIR   (Debian's python3-torch; random weights, seed 0)
"""
import os
import sys

import numpy as np
import torch


class LinearRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 3)

    def forward(self, x):
        h = self.fc(x)
        return torch.relu(h), h


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = LinearRelu().eval()
    x = torch.randn(2, 2)
    with torch.no_grad():
        ys = m(x)
        torch.onnx.export(m, (x,), os.path.join(out, "model.onnx"))
    np.save(os.path.join(out, "x.npy"), x.numpy())
    for i, y in enumerate(ys):
        np.save(os.path.join(out, f"y{i}.npy"), y.numpy())


if __name__ == "__main__":
    main()
