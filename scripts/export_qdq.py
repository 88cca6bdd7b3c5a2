#!/usr/bin/env python3
"""Exports small quantization-aware-trained (fake-quantized) PyTorch models to ONNX, where each
fake quantization becomes a QuantizeLinear/DequantizeLinear pair (opset 13).

Models (random weights from the first torch.manual_seed that keeps every rounded value at
least 1e-4 quantization steps from a tie, see export; nothing is downloaded):
  qdq_mlp:  Linear(32, 64) -> ReLU -> Linear(64, 16), input x [4, 32]
  qdq_conv: Conv2d(3, 8, 3, padding=1) -> ReLU -> Conv2d(8, 4, 3), input x [1, 3, 8, 8]
each between a QuantStub and a DeQuantStub, prepared with torch.ao.quantization.prepare_qat and
FakeQuantize modules (default_fake_quant: activations per-tensor uint8; and
default_per_channel_weight_fake_quant: weights per-channel symmetric int8), calibrated on a
few random batches, then frozen (observers and fake quantization's statistics disabled) and
exported in eval mode. The outputs written are PyTorch's for the exported inputs: the fake
quantization rounds half to even and saturates, as QuantizeLinear does.

Beside each NAME_opset13.onnx the script writes NAME_inputs/x.npy and NAME_outputs/OUT.npy,
where the ONNX suite's TestExported checks gcomp (reference interpreter and simulator) against
PyTorch.

Run: /usr/bin/python3 scripts/export_qdq.py frontend/onnx/suite/testdata/exported
Needs Debian's python3-torch (1.13) and python3-onnx.
"""
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.ao.quantization as tq


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.fc1, self.relu, self.fc2 = nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16)

    def forward(self, x):
        return self.dequant(self.fc2(self.relu(self.fc1(self.quant(x)))))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.c1, self.relu, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3)

    def forward(self, x):
        return self.dequant(self.c2(self.relu(self.c1(self.quant(x)))))


def margin(model, x):
    """The least distance, in quantization steps, of a value a FakeQuantize rounds (weights and
    activations) from a rounding boundary (a .5 tie)."""
    least = [float("inf")]

    def pre(mod, args):
        if mod.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
            return  # the weights: see weights_agree
        v = args[0].detach().double()
        s = mod.scale.double()
        if mod.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
            shape = [1] * v.dim()
            shape[mod.ch_axis] = -1
            s = s.reshape(shape)
        q = v / s
        least[0] = min(least[0], float(((q - q.floor()) - 0.5).abs().min()))

    hooks = [m.register_forward_pre_hook(pre) for m in model.modules() if isinstance(m, tq.FakeQuantize)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return least[0]


def weights_agree(model):
    """Whether each fake-quantized weight is what DequantizeLinear(QuantizeLinear(w)) gives in
    float32 (a division, rounding half to even, saturation): a symmetric scale puts the largest
    weight of each channel on a tie, where PyTorch's multiplication by 1/scale can land on
    either side."""
    for m in model.modules():
        fq = getattr(m, "weight_fake_quant", None)
        if fq is None:
            continue
        w = m.weight.detach().numpy().astype(np.float32)
        s = fq.scale.detach().numpy().astype(np.float32).reshape([-1] + [1] * (w.ndim - 1))
        z = fq.zero_point.detach().numpy().astype(np.float32).reshape(s.shape)
        q = np.clip(np.round(w / s) + z, fq.quant_min, fq.quant_max)
        onnx_w = ((q - z) * s).astype(np.float32)
        with torch.no_grad():
            if not np.array_equal(fq(m.weight).numpy(), onnx_w):
                return False
    return True


def export(out, name, make, shape):
    """Exports the first seed's model and input whose fake-quantized weights agree with ONNX's
    (weights_agree) and whose rounded activations all lie at least 1e-4 steps from a tie: there
    float32 rounding differences between PyTorch's kernels (which multiply by 1/scale) and an
    ONNX runtime's (QuantizeLinear divides) would flip a whole quantization step, which no float
    tolerance covers."""
    for seed in range(100):
        torch.manual_seed(seed)
        model = make()
        model.train()
        # FakeQuantize modules (the default QAT qconfigs' fused observer-fake-quant has no ONNX export)
        model.qconfig = tq.QConfig(activation=tq.default_fake_quant, weight=tq.default_per_channel_weight_fake_quant)
        model = tq.prepare_qat(model)
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(*shape))
        model.apply(tq.disable_observer)
        model.eval()
        # A symmetric scale puts each channel's largest weight on the tie at ±127.5 steps;
        # widened by 0.1%, none is (weights_agree checks the rest).
        with torch.no_grad():
            for m in model.modules():
                if hasattr(m, "weight_fake_quant"):
                    m.weight_fake_quant.scale.mul_(1.001)
        x = torch.randn(*shape)
        if margin(model, x) >= 1e-4 and weights_agree(model):
            break
    else:
        raise SystemExit(name + ": no seed below 100 keeps the rounded values off the ties")
    with torch.no_grad():
        y = model(x)
    print(name, "seed", seed)
    path = os.path.join(out, name + "_opset13.onnx")
    torch.onnx.export(model, (x,), path, opset_version=13, input_names=["x"], output_names=["y"])
    for sub, arr, what in (("_inputs", x, "x"), ("_outputs", y, "y")):
        d = os.path.join(out, name + sub)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, what + ".npy"), arr.numpy().astype(np.float32))


def main(out):
    export(out, "qdq_mlp", MLP, (4, 32))
    export(out, "qdq_conv", ConvNet, (1, 3, 8, 8))


if __name__ == "__main__":
    main(sys.argv[1])
