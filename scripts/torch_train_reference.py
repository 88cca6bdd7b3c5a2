#!/usr/bin/env python3
"""PyTorch reference trajectories for the train package's parity tests.

Everything is generated from one integer hash (mix32 below), so the Go tests rebuild the same
data and initial weights bit for bit without committing them:

  - mlp_sgd.npy, mlp_adam.npy: the loss at each of 100 steps of an MLP 784-256-10 (ReLU) in
    float32, batch 32, cross-entropy, cycling through 4 fixed batches; SGD (lr 0.01, momentum
    0.9) and Adam (lr 1e-3, PyTorch's other defaults).
  - cnn_sgd.npy: the loss at each of 20 SGD steps (lr 0.05, momentum 0.9) of a small CNN
    (conv 1->4 3x3 pad 1, ReLU, 2x2 max pool, linear 144->10), batch 4 of 12x12 images.
  - optim_<config>.npy: a tiny float64 least-squares problem, 6 steps of each optimizer
    configuration, the flattened parameters after every step ([steps, 2*3+2]).

Usage: torch_train_reference.py OUT_DIR   (scripts/torch_train_reference.sh drives it)
       torch_train_reference.py bench     (images/s of the MLP's SGD and Adam steps, batch 32)
Needs Debian's python3-torch (CPU) and python3-numpy.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

M32 = 0xFFFFFFFF


def mix32(n, salt):
    """n uniform values in [0, 1), multiples of 2^-24: a 32-bit integer hash of (index, salt)."""
    h = (np.arange(n, dtype=np.uint64) * 0x9E3779B1 + salt * 0x7F4A7C15 + 12345) & M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return (h >> 8).astype(np.float64) / float(1 << 24)


def uniform(shape, salt, bound, dtype):
    """U(-bound, bound) computed in float64 and rounded once to dtype."""
    n = int(np.prod(shape))
    return torch.from_numpy(((2 * mix32(n, salt) - 1) * bound).astype(dtype).reshape(shape))


def labels(n, salt, classes):
    return torch.from_numpy((mix32(n, salt) * classes).astype(np.int64))


BATCH, BATCHES, STEPS = 32, 4, 100


def mlp_batches():
    xs = [torch.from_numpy(mix32(BATCH * 784, 100 + i).astype(np.float32).reshape(BATCH, 784)) for i in range(BATCHES)]
    ys = [labels(BATCH, 200 + i, 10) for i in range(BATCHES)]
    return xs, ys


def mlp():
    fc1, fc2 = nn.Linear(784, 256), nn.Linear(256, 10)
    with torch.no_grad():
        for salt, (p, fan_in) in enumerate([(fc1.weight, 784), (fc1.bias, 784), (fc2.weight, 256), (fc2.bias, 256)]):
            p.copy_(uniform(tuple(p.shape), salt + 1, 1 / np.sqrt(fan_in), np.float32))
    return nn.Sequential(fc1, nn.ReLU(), fc2)


def train_mlp(make_opt):
    torch.manual_seed(0)
    model = mlp()
    opt = make_opt(model.parameters())
    xs, ys = mlp_batches()
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[step % BATCHES]), ys[step % BATCHES])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses, dtype=np.float64)


def train_cnn(steps=20):
    conv, fc = nn.Conv2d(1, 4, 3, padding=1), nn.Linear(144, 10)
    with torch.no_grad():
        for salt, (p, fan_in) in enumerate([(conv.weight, 9), (conv.bias, 9), (fc.weight, 144), (fc.bias, 144)]):
            p.copy_(uniform(tuple(p.shape), salt + 11, 1 / np.sqrt(fan_in), np.float32))
    model = nn.Sequential(conv, nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), fc)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        k = step % 2
        x = torch.from_numpy(mix32(4 * 144, 400 + k).astype(np.float32).reshape(4, 1, 12, 12))
        y = labels(4, 500 + k, 10)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses, dtype=np.float64)


OPTIM_CONFIGS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum_dampening_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01),
    "sgd_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.02),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam_wd": lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.02),
}


def train_tiny(make_opt, steps=6):
    """Least squares: x[5,3] · wᵀ + b ≈ y[5,2] in float64, MSE loss."""
    w = uniform((2, 3), 301, 0.5, np.float64).requires_grad_()
    b = uniform((2,), 302, 0.5, np.float64).requires_grad_()
    x = uniform((5, 3), 303, 1.0, np.float64)
    y = uniform((5, 2), 304, 1.0, np.float64)
    opt = make_opt([w, b])
    out = []
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(F.linear(x, w, b), y).backward()
        opt.step()
        out.append(torch.cat([w.detach().flatten(), b.detach().flatten()]).numpy().copy())
    return np.stack(out)


def bench(steps=200):
    default = torch.get_num_threads()
    for threads in sorted({default, os.cpu_count() or default}):
        torch.set_num_threads(threads)
        bench_threads(steps)


def bench_threads(steps):
    import time
    xs, ys = mlp_batches()
    for name, make in [("sgd", lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
                       ("adam", lambda p: torch.optim.Adam(p, lr=1e-3))]:
        model = mlp()
        opt = make(model.parameters())
        best = None
        for _ in range(3):
            start = time.perf_counter()
            for step in range(steps):
                opt.zero_grad()
                F.cross_entropy(model(xs[0]), ys[0]).backward()
                opt.step()
            t = (time.perf_counter() - start) / steps
            best = t if best is None else min(best, t)
        print("torch %s: %.3f ms/step, %.0f images/s (%d threads)" % (name, best * 1e3, BATCH / best, torch.get_num_threads()))


def main():
    if sys.argv[1] == "bench":
        bench()
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    np.save(os.path.join(out, "mlp_sgd.npy"), train_mlp(lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)))
    np.save(os.path.join(out, "mlp_adam.npy"), train_mlp(lambda p: torch.optim.Adam(p, lr=1e-3)))
    np.save(os.path.join(out, "cnn_sgd.npy"), train_cnn())
    for name, make in OPTIM_CONFIGS.items():
        np.save(os.path.join(out, "optim_" + name + ".npy"), train_tiny(make))


if __name__ == "__main__":
    main()
