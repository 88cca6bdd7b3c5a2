#!/usr/bin/env python3
"""Reference values of the one-cycle learning-rate schedule of package train, computed by PyTorch.

"rates": for each OneCycleLR configuration, the learning rate and the momentum (SGD's momentum or
Adam's beta1) an optimizer holds before each of its total_steps updates, the scheduler stepped
after every update but the last (param_groups[0]; a dummy parameter without gradient, so the updates change
nothing).

"trajectories": w = [0.5, -0.3, 0.2] (float64) trained for total_steps updates on
loss = sum(w*x) + sum(w*w), x = [1, 2, -1.5], under OneCycleLR with PyTorch's defaults but
total_steps: w after each update. train/schedule_onecycle_test.go builds the same optimizer and
schedule with train.Schedule and checks the reference interpreter against these values.

Usage: torch_onecycle_reference.py > train/testdata/torch_onecycle.json
Needs Debian's python3-torch (CPU).
"""
import json

import torch

DEFAULTS = {"pct_start": 0.3, "div_factor": 25.0, "final_div_factor": 1e4, "cycle_momentum": True,
            "base_momentum": 0.85, "max_momentum": 0.95}


def make_optimizer(spec, params):
    args = {k: v for k, v in spec.items() if k != "name"}
    if spec["name"] == "sgd":
        return torch.optim.SGD(params, **args)
    if spec["name"] == "adam":
        return torch.optim.Adam(params, **args)
    if spec["name"] == "adamw":
        return torch.optim.AdamW(params, **args)
    raise ValueError(spec["name"])


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def schedule(opt, total, sched):
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=opt.param_groups[0]["lr"], total_steps=total,
                                               anneal_strategy="cos", three_phase=False, **sched)


rates = []
for optimizer, total, sched in [
    ({"name": "sgd", "lr": 0.1}, 1, {}),
    ({"name": "sgd", "lr": 0.1}, 2, {}),
    ({"name": "sgd", "lr": 0.1, "momentum": 0.9}, 3, {}),
    ({"name": "adam", "lr": 0.01}, 4, {}),
    ({"name": "adam", "lr": 0.01}, 7, {}),
    ({"name": "sgd", "lr": 0.5}, 10, {}),
    ({"name": "adamw", "lr": 0.003}, 33, {}),
    ({"name": "sgd", "lr": 0.05, "momentum": 0.9}, 100, {"cycle_momentum": False}),
    ({"name": "adam", "lr": 0.02}, 50, {"pct_start": 0.25, "div_factor": 10.0, "final_div_factor": 100.0,
                                        "base_momentum": 0.8, "max_momentum": 0.9}),
    ({"name": "sgd", "lr": 0.1}, 20, {"pct_start": 0.0}),
    ({"name": "sgd", "lr": 0.1}, 20, {"pct_start": 1.0}),
]:
    s = dict(DEFAULTS, **sched)
    p = torch.nn.Parameter(torch.zeros(1))
    opt = make_optimizer(optimizer, [p])
    sch = schedule(opt, total, s)
    lr, mom = [], []
    for k in range(total):
        g = opt.param_groups[0]
        lr.append(g["lr"])
        mom.append(momentum_of(g))
        opt.step()
        if k < total - 1:  # pct_start 1 divides by zero stepping past the last update
            sch.step()
    rates.append({"optimizer": optimizer, "total_steps": total, "schedule": s, "lr": lr, "momentum": mom})

trajectories = []
x = torch.tensor([1.0, 2.0, -1.5], dtype=torch.float64)
for optimizer in [
    {"name": "sgd", "lr": 0.1},
    {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True},
    {"name": "sgd", "lr": 0.1, "momentum": 0.5, "dampening": 0.2, "weight_decay": 0.01},
    {"name": "adam", "lr": 0.05},
    {"name": "adamw", "lr": 0.05, "weight_decay": 0.1},
]:
    total = 8
    w = torch.nn.Parameter(torch.tensor([0.5, -0.3, 0.2], dtype=torch.float64))
    opt = make_optimizer(optimizer, [w])
    sch = schedule(opt, total, DEFAULTS)
    ws = []
    for _ in range(total):
        opt.zero_grad()
        ((w * x).sum() + (w * w).sum()).backward()
        opt.step()
        sch.step()
        ws.append(w.detach().tolist())
    trajectories.append({"optimizer": optimizer, "total_steps": total, "w": ws})

print(json.dumps({"torch": torch.__version__, "rates": rates, "trajectories": trajectories}, indent=1))
