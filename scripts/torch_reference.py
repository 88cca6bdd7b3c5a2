#!/usr/bin/env python3
"""Independent reference values for the example models, computed by PyTorch.

For each example this builds the PyTorch module of the same definition (the tutorial's), loads
the weights gcomp wrote with `gcomp init-weights` using load_state_dict(strict=True) - which also
proves that gcomp's parameter names and layouts are PyTorch's - runs it in float64 on the inputs
gcomp used (`gcomp run --save-inputs`), and writes each output as NAME.npy.

Usage: torch_reference.py MODEL WEIGHTS.safetensors INPUT_DIR OUT_DIR
Driven by scripts/torch_reference.sh, which regenerates testdata/torch/. Needs Debian's
python3-torch (CPU) and python3-numpy.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ST_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
             "I32": np.int32, "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(data[base + lo:base + hi], dtype=ST_DTYPES[info["dtype"]])
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


class LinearRegression(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.linear = nn.Linear(i, o)

    def forward(self, x):
        return {"y": self.linear(x)}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 10))

    def forward(self, x):
        return {"y": self.seq(x)}


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=1, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 32 * 7 * 7)
        x = F.relu(self.fc1(x))
        return {"logits": self.fc2(x)}


class RNN(nn.Module):
    def __init__(self, input_size=57, hidden_size=128, output_size=18):
        super().__init__()
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.softmax(self.i2o(combined))
        return {"output": output, "hidden_next": hidden}


class LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        return {"out": out, "h_n": h_n, "c_n": c_n}


def transformer():
    return nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                      activation="gelu", batch_first=True, layer_norm_eps=1e-5)


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, with the softmax written out (torch 1.13 has no SDPA)."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.mlp.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = self.ln_2(x)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(h)))


class GPT(nn.Module):
    def __init__(self, n_layer=2, n_embd=128, n_head=4, vocab=512, seq=64):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd),
            wpe=nn.Embedding(seq, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))

    def forward(self, tokens):
        t = self.transformer
        pos = torch.arange(tokens.size(1))
        x = t.wte(tokens) + t.wpe(pos)
        for block in t.h:
            x = block(x)
        x = t.ln_f(x)
        return {"logits": F.linear(x, t.wte.weight)}  # lm_head tied to wte


class Wrapped(nn.Module):
    """A module whose state_dict is the inner module's own (no prefix), returning a dict."""

    def __init__(self, inner, out):
        super().__init__()
        self.inner, self.out = inner, out

    def state_dict_target(self):
        return self.inner

    def forward(self, *args):
        return {self.out: self.inner(*args)}


class BasicBlock(nn.Module):
    """torchvision's BasicBlock."""

    def __init__(self, i, o, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(i, o, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(o)
        self.downsample = None
        if stride != 1 or i != o:
            self.downsample = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.downsample is not None:
            x = self.downsample(x)
        return F.relu(y + x)


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = BasicBlock(16, 16, 1)
        self.layer2 = BasicBlock(16, 32, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return {"logits": self.fc(torch.flatten(self.pool(x), 1))}


def conv_bn_relu6(i, o, k, groups):
    return nn.Sequential(nn.Conv2d(i, o, k, 1, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(o), nn.ReLU6())


class InvertedResidual(nn.Module):
    """torchvision's InvertedResidual with stride 1 and equal channels."""

    def __init__(self, ch, expand):
        super().__init__()
        h = ch * expand
        self.conv = nn.Sequential(conv_bn_relu6(ch, h, 1, 1), conv_bn_relu6(h, h, 3, h), nn.Conv2d(h, ch, 1, bias=False),
                                  nn.BatchNorm2d(ch))

    def forward(self, x):
        return x + self.conv(x)


class MobileNetBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = InvertedResidual(16, 4)

    def forward(self, x):
        return {"y": self.block(x)}


def double_conv(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(),
                         nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU())


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = double_conv(3, 8)
        self.enc2 = double_conv(8, 16)
        self.mid = double_conv(16, 32)
        self.up = nn.Upsample(scale_factor=2)
        self.dec2 = double_conv(32 + 16, 16)
        self.dec1 = double_conv(16 + 8, 8)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        mid = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up(mid), e2], 1))
        d1 = self.dec1(torch.cat([self.up(d2), e1], 1))
        return {"logits": self.head(d1)}


MODELS = {
    "linreg": (lambda: LinearRegression(2, 5), ["x"]),
    "mlp": (MLP, ["x"]),
    "cnn": (CNN, ["x"]),
    "rnn": (RNN, ["input", "hidden"]),
    "lstm": (LSTM, ["x", "h0", "c0"]),
    "transformer": (lambda: Wrapped(transformer(), "y"), ["src"]),
    "gpt": (GPT, ["tokens"]),
    "resnet": (ResNet, ["x"]),
    "unet": (UNet, ["x"]),
    "mobilenet": (MobileNetBlock, ["x"]),
}


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    name, weights, in_dir, out_dir = sys.argv[1:]
    make, input_names = MODELS[name]
    torch.manual_seed(0)
    model = make()
    state = read_safetensors(weights)
    target = model.state_dict_target() if isinstance(model, Wrapped) else model
    if name == "mlp":
        target = model.seq  # Sequential's own keys: 0.weight, ...
    target.load_state_dict(state, strict=True)
    model = model.double().eval()
    inputs = []
    for n in input_names:
        arr = np.load(os.path.join(in_dir, n + ".npy"))
        t = torch.from_numpy(arr)
        inputs.append(t.double() if t.is_floating_point() else t)
    with torch.no_grad():
        outs = model(*inputs)
    os.makedirs(out_dir, exist_ok=True)
    for k, v in outs.items():
        np.save(os.path.join(out_dir, k + ".npy"), v.numpy().astype(np.float64))


if __name__ == "__main__":
    main()
