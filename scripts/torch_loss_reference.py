#!/usr/bin/env python3
"""Reference values of the losses of package train, computed by PyTorch.

For each case: the inputs (drawn here with a fixed seed), the loss's arguments, the reduction,
and torch.nn.<Loss>'s result in float64 on those inputs, and the gradient of the sum of the
result with respect to the prediction. train/loss_test.go builds the same loss with train.Loss
and checks the reference interpreter, and the loss's gradient (passes/autodiff), against these
values. A value that is not finite is written as a string ("NaN", "Infinity", "-Infinity"):
a batch whose every label is ignored has the mean 0/0.

Usage: torch_loss_reference.py > train/testdata/torch_losses.json
Needs Debian's python3-torch (CPU).
"""
import json
import math

import torch
import torch.nn as nn

torch.manual_seed(18)
N, C = 5, 4
logits = torch.randn(N, C, dtype=torch.float64) * 2
labels = torch.tensor([0, 3, 1, 1, 2])
ignored = torch.tensor([3, 3, 3, 3, 3])  # every label ignored with ignore_index 3
pred = torch.randn(N, C, dtype=torch.float64)
target = torch.randn(N, C, dtype=torch.float64)
probs = torch.rand(N, C, dtype=torch.float64)
weight = [0.5, 2.0, 1.0, 0.25]
pos_weight = [1.0, 3.0, 0.5, 2.0]

cases = []


def floats(t):
    return [v if math.isfinite(v) else repr(v).replace("nan", "NaN").replace("inf", "Infinity") for v in t.flatten().tolist()]


def add(name, loss_args, pred_t, target_t):
    for reduction in ["mean", "sum", "none"]:
        args = {k: (torch.tensor(v, dtype=torch.float64) if isinstance(v, list) else v) for k, v in loss_args.items()}
        fn = getattr(nn, name)(reduction=reduction, **args)
        p = pred_t.detach().clone().requires_grad_()
        out = fn(p, target_t)
        out.sum().backward()
        cases.append({
            "loss": name, "args": loss_args, "reduction": reduction,
            "pred": pred_t.flatten().tolist(), "target": target_t.flatten().tolist(),
            "shape": list(pred_t.shape), "want": floats(out.detach()), "grad": floats(p.grad),
        })


logp = torch.log_softmax(logits, 1)
for args in [{}, {"weight": weight}, {"ignore_index": 1}, {"label_smoothing": 0.1},
             {"weight": weight, "ignore_index": 3, "label_smoothing": 0.2}]:
    add("CrossEntropyLoss", args, logits, labels)
for args in [{}, {"weight": weight}, {"ignore_index": 1}, {"weight": weight, "ignore_index": 0}]:
    add("NLLLoss", args, logp, labels)
# Every label ignored: the mean is 0/0 (NaN), the gradients zero.
for args in [{"ignore_index": 3}, {"weight": weight, "ignore_index": 3, "label_smoothing": 0.2}]:
    add("CrossEntropyLoss", args, logits, ignored)
for args in [{"ignore_index": 3}, {"weight": weight, "ignore_index": 3}]:
    add("NLLLoss", args, logp, ignored)
add("MSELoss", {}, pred, target)
add("L1Loss", {}, pred, target)
for args in [{}, {"beta": 0.5}, {"beta": 0.0}, {"beta": 2.0}]:
    add("SmoothL1Loss", args, pred, target)
for args in [{}, {"pos_weight": pos_weight}]:
    add("BCEWithLogitsLoss", args, logits, probs)

print('{"torch": %s, "cases": [\n%s\n]}' % (json.dumps(torch.__version__), ",\n".join(json.dumps(c) for c in cases)))
