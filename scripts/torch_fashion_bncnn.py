#!/usr/bin/env python3
"""examples/fashion/bncnn trained in PyTorch, for comparison with gcomp train (docs/perf.md).

The same network (conv 1->16 and 16->32, 3x3, padding 1, no bias, each followed by BatchNorm2d,
ReLU and 2x2 max pooling; linear 1568->128, ReLU, Dropout(0.25), linear 128->10), PyTorch's own
initialization, pixels in [0,1], cross-entropy, Adam, batch 32 with the last partial batch
dropped, the test set measured in eval mode after every epoch. Its initial weights and shuffle
come from torch.manual_seed, not from gcomp's generator.

Usage: torch_fashion_bncnn.py [--epochs 5] [--lr 0.001] [--lr-schedule none|cosine] [--seed 0]
                              [--data DIR] [--threads N]
Needs Debian's python3-torch (CPU) and dataset-fashion-mnist.
"""
import argparse
import gzip
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def idx(path, offset):
    with gzip.open(path) as f:
        return torch.frombuffer(bytearray(f.read()[offset:]), dtype=torch.uint8)


def load(d, split):
    x = idx(f"{d}/{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28).float() / 255
    y = idx(f"{d}/{split}-labels-idx1-ubyte.gz", 8).long()
    return x, y


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-schedule", choices=["none", "cosine"], default="cosine")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    model = CNN()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    batches = len(xtr) // a.batch
    # gcomp train --lr-schedule cosine: stepped every batch, T_max the run's batches.
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs * batches) if a.lr_schedule == "cosine" else None
    start = time.time()
    for epoch in range(1, a.epochs + 1):
        model.train()
        perm = torch.randperm(len(xtr))
        loss_sum, correct = 0.0, 0
        for i in range(batches):
            b = perm[i * a.batch:(i + 1) * a.batch]
            opt.zero_grad()
            out = model(xtr[b])
            loss = F.cross_entropy(out, ytr[b])
            loss.backward()
            opt.step()
            if sched:
                sched.step()
            loss_sum += loss.item() * a.batch
            correct += (out.argmax(1) == ytr[b]).sum().item()
        model.eval()
        with torch.no_grad():
            out = model(xte)
            test_loss = F.cross_entropy(out, yte).item()
            test_acc = (out.argmax(1) == yte).float().mean().item()
        n = batches * a.batch
        print(f"epoch {epoch}/{a.epochs}: train loss {loss_sum / n:.4f}, train accuracy {100 * correct / n:.2f}%, "
              f"test loss {test_loss:.4f}, test accuracy {100 * test_acc:.2f}% ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
