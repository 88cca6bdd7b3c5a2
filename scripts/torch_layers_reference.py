#!/usr/bin/env python3
"""PyTorch's values for the layers of frontend and frontend/nn, forward and backward.

For every case below this writes OUT_DIR/CASE/: x.npy (the input), p.NAME.npy (each parameter
or buffer, under its state_dict key), y.npy (the output; y.N.npy for several), and, for
differentiable cases, gx.npy and gp.NAME.npy: the gradients of sum(y·u) with u = u.npy, a fixed
upstream gradient. Everything is float64, computed by PyTorch in float64 (eval mode). The Go
tests (frontend/nn) build the same layer with gcomp's modules, bind these values and compare,
forward on the reference interpreter and backward through passes/autodiff.

With --odd, it writes instead OUT_DIR/CASE.DT.safetensors, DT f32, f16 and bf16, for the cases of
ODD_SHAPES: the same layers on inputs whose sizes are 1, 3, 7 and 33, with the input,
parameters and buffers rounded to the dtype and PyTorch computing in that dtype (CPU), forward and
backward, under the keys x, y (y.N), u (u.N), gx, p.KEY, gp.KEY and b.KEY above. Where PyTorch 1.13's
CPU kernels do not take the dtype (mish, f16 convolutions, ...), the case is computed in float32 on
the rounded values and its outputs and gradients rounded to the dtype, as a GPU's f16 kernels
compute internally in float32; the file's metadata says which ("compute": "f16", "bf16" or "f32").

With --amp, it writes OUT_DIR/CASE.amp_f16.safetensors and CASE.amp_bf16.safetensors for the cases of
AMP_CASES: the layer in float32 (x, p.KEY, u in float32) run as CUDA's torch.autocast runs it (CPU
autocast in 1.13 knows bf16 only and keeps more ops in bf16): linear, matmul, bmm, baddbmm and the
convolutions read their float operands rounded to the dtype, accumulate in float32 and round their
result to the dtype; everything else (norms, softmax, reductions, elementwise) computes in float32.
y and gp.KEY are that run's output and parameter gradients (float32); f32.y and f32.gp.KEY the same
layer without autocast, to tell the two apart.

Usage: torch_layers_reference.py [--odd | --amp] OUT_DIR   (Debian's python3-torch and python3-numpy)
"""
import copy
import json
import struct
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

# Activation inputs: the kinks and thresholds of every activation, signed zeros, and a spread.
SPECIAL = [-30, -20.5, -17, -9, -6, -3.5, -3, -2.5, -1, -0.75, -0.5, -1e-3, -0.0, 0.0, 1e-3, 0.5, 0.75, 1,
           2.5, 3, 3.5, 6, 6.5, 9, 17, 19.9, 20, 20.5, 30]


def act_input():
    g = np.random.default_rng(1)
    x = np.concatenate([np.array(SPECIAL), g.uniform(-8, 8, 3 * 33 - len(SPECIAL))])
    return torch.tensor(x.reshape(3, 33))


def rand(seed, *shape):
    return torch.tensor(np.random.default_rng(seed).uniform(-1, 1, shape))


def cases():
    c = {}

    def act(name, f, module=None):
        c[name] = (act_input(), module if module is not None else f)

    act("clamp", lambda x: torch.clamp(x, -1.5, 2.5))
    act("clamp_inverted", lambda x: torch.clamp(x, 2.0, -1.0))
    act("hardtanh", None, nn.Hardtanh())
    act("hardtanh_0_3", None, nn.Hardtanh(0.0, 3.0))
    act("relu6", None, nn.ReLU6())
    act("hardswish", None, nn.Hardswish())
    act("hardsigmoid", None, nn.Hardsigmoid())
    act("leaky_relu", None, nn.LeakyReLU())
    act("leaky_relu_0.2", None, nn.LeakyReLU(0.2))
    act("elu", None, nn.ELU())
    act("elu_0.5", None, nn.ELU(0.5))
    act("softplus", None, nn.Softplus())
    act("softplus_beta2_th5", None, nn.Softplus(beta=2.0, threshold=5.0))
    act("mish", None, nn.Mish())
    p = nn.PReLU()
    act("prelu", None, p)
    p3 = nn.PReLU(3)
    with torch.no_grad():
        p3.weight.copy_(torch.tensor([0.25, -0.5, 1.5]))
    c["prelu3"] = (act_input().reshape(3, 3, 11), p3)

    # Norms (eval mode: running statistics), with weights drawn away from the defaults.
    def bn(m, shape, seed):
        with torch.no_grad():
            m.weight.copy_(rand(seed, m.num_features) + 1)
            m.bias.copy_(rand(seed + 1, m.num_features))
            m.running_mean.copy_(rand(seed + 2, m.num_features))
            m.running_var.copy_(rand(seed + 3, m.num_features) + 1.5)
            m.num_batches_tracked.fill_(7)
        return (rand(seed + 4, *shape), m.eval())

    c["batchnorm2d"] = bn(nn.BatchNorm2d(3), (2, 3, 5, 7), 10)
    # Training mode (names ending in _train): batch statistics, and the buffers after the step
    # as b.KEY.npy.
    x, m = bn(nn.BatchNorm2d(3, momentum=0.3), (2, 3, 5, 7), 15)
    c["batchnorm2d_train"] = (x, m.train())
    x, m = bn(nn.BatchNorm1d(5), (7, 5), 25)
    c["batchnorm1d_train"] = (x, m.train())
    c["batchnorm1d"] = bn(nn.BatchNorm1d(5, eps=1e-3), (4, 5), 20)
    c["batchnorm1d_3d"] = bn(nn.BatchNorm1d(3), (2, 3, 7), 30)
    gn = nn.GroupNorm(2, 6)
    with torch.no_grad():
        gn.weight.copy_(rand(40, 6) + 1)
        gn.bias.copy_(rand(41, 6))
    c["groupnorm"] = (rand(42, 3, 6, 5, 3), gn)
    c["instancenorm2d"] = (rand(43, 2, 3, 5, 7), nn.InstanceNorm2d(3))
    inn = nn.InstanceNorm2d(3, affine=True)
    with torch.no_grad():
        inn.weight.copy_(rand(44, 3) + 1)
        inn.bias.copy_(rand(45, 3))
    c["instancenorm2d_affine"] = (rand(46, 2, 3, 5, 7), inn)

    # Convolutions.
    torch.manual_seed(0)
    c["conv1d"] = (rand(50, 2, 4, 11), nn.Conv1d(4, 6, 3, stride=2, padding=1))
    c["conv1d_groups_dil"] = (rand(51, 1, 4, 13), nn.Conv1d(4, 2, 3, dilation=2, groups=2, bias=False))
    c["conv2d_rect"] = (rand(52, 2, 3, 9, 8), nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)))
    c["conv2d_same"] = (rand(53, 1, 2, 7, 6), nn.Conv2d(2, 3, (4, 3), padding="same"))
    c["conv2d_same_dil"] = (rand(54, 1, 2, 7, 7), nn.Conv2d(2, 2, 3, padding="same", dilation=2))
    c["conv_transpose2d"] = (rand(55, 2, 4, 5, 3), nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1))
    c["conv_transpose2d_groups"] = (rand(56, 1, 4, 3, 4), nn.ConvTranspose2d(4, 6, (2, 3), stride=(1, 2), padding=(0, 2),
                                                                            groups=2, dilation=(2, 1)))
    c["conv_transpose2d_tiles"] = (rand(58, 2, 3, 4, 5), nn.ConvTranspose2d(3, 2, 2, stride=2))
    c["conv_transpose2d_tiles_pad"] = (rand(59, 1, 2, 3, 3), nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1, output_padding=2))
    c["conv_transpose2d_plain"] = (rand(57, 1, 2, 3, 3), nn.ConvTranspose2d(2, 1, 3, bias=False))

    # Pooling, resampling, movement.
    c["adaptive_avg_pool2d"] = (rand(60, 2, 3, 7, 10), nn.AdaptiveAvgPool2d((3, 4)))
    c["adaptive_avg_pool2d_div"] = (rand(61, 1, 2, 8, 6), nn.AdaptiveAvgPool2d(2))
    c["adaptive_avg_pool2d_up"] = (rand(62, 1, 2, 3, 2), nn.AdaptiveAvgPool2d((5, 3)))
    c["adaptive_avg_pool2d_1"] = (rand(74, 2, 3, 5, 7), nn.AdaptiveAvgPool2d(1))
    c["adaptive_max_pool2d"] = (rand(63, 2, 3, 7, 10), nn.AdaptiveMaxPool2d((3, 4)))
    c["adaptive_max_pool2d_1"] = (rand(64, 1, 3, 5, 5), nn.AdaptiveMaxPool2d(1))
    c["flip"] = (rand(65, 2, 3, 4), lambda x: torch.flip(x, (0, 2)))
    c["upsample_nearest_2"] = (rand(66, 1, 2, 3, 4), nn.Upsample(scale_factor=2, mode="nearest"))
    c["upsample_nearest_size"] = (rand(67, 1, 2, 3, 5), nn.Upsample(size=(7, 3), mode="nearest"))
    c["upsample_bilinear"] = (rand(68, 1, 2, 3, 4), nn.Upsample(scale_factor=2, mode="bilinear"))
    c["upsample_bilinear_ac"] = (rand(69, 1, 2, 3, 4), nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True))
    c["interpolate_bilinear_size"] = (rand(70, 2, 1, 5, 3), lambda x: F.interpolate(x, size=(3, 7), mode="bilinear"))
    c["interpolate_bilinear_size_ac"] = (rand(71, 2, 1, 5, 3), lambda x: F.interpolate(x, size=(3, 7), mode="bilinear",
                                                                                       align_corners=True))
    c["cumsum"] = (rand(72, 3, 33), lambda x: torch.cumsum(x, 1))
    c["cumsum0"] = (rand(73, 7, 2), lambda x: torch.cumsum(x, 0))

    # Reductions with indices (integer outputs, no gradient through them).
    xi = rand(80, 3, 7)
    xi[1, 2] = xi[1, 5] = 5.0  # a tie: the first occurrence wins
    xi[2, 4] = float("nan")
    xi[2, 6] = float("nan")
    c["argmax"] = (xi, lambda x: torch.argmax(x, 1))
    c["argmin"] = (xi, lambda x: torch.argmin(x, 1))
    xt = rand(81, 3, 7)
    c["topk"] = (xt, lambda x: torch.topk(x, 3, 1))
    c["topk_smallest"] = (xt, lambda x: torch.topk(x, 2, 1, largest=False))

    # The stack of encoder layers, with PyTorch's key names layers.N.*.
    torch.manual_seed(1)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), 2,
                                enable_nested_tensor=False)
    c["transformer_encoder"] = (rand(90, 2, 5, 8), enc.eval())
    return c


def save(d, name, t):
    np.save(os.path.join(d, name + ".npy"), t.detach().numpy() if torch.is_tensor(t) else t)


# The odd-size cases: each layer of cases() on an input of odd sizes (1, 3, 7, 33), drawn
# with the seed given (None: the activation input, act_input's values in this shape).
ODD_SHAPES = {
    "clamp": None, "clamp_inverted": None, "hardtanh": None, "hardtanh_0_3": None, "relu6": None,
    "hardswish": None, "hardsigmoid": None, "leaky_relu": None, "leaky_relu_0.2": None, "elu": None,
    "elu_0.5": None, "softplus": None, "softplus_beta2_th5": None, "mish": None, "prelu": None,
    "prelu3": None,
    "batchnorm2d": (110, 1, 3, 7, 33), "batchnorm2d_train": (111, 3, 3, 7, 1),
    "batchnorm1d": (112, 33, 5), "batchnorm1d_train": (113, 7, 5), "batchnorm1d_3d": (114, 1, 3, 33),
    "groupnorm": (115, 3, 6, 7, 1), "instancenorm2d": (116, 1, 3, 7, 33),
    "instancenorm2d_affine": (117, 3, 3, 7, 3),
    "conv1d": (120, 3, 4, 33), "conv1d_groups_dil": (121, 1, 4, 7), "conv2d_rect": (122, 1, 3, 7, 33),
    "conv2d_same": (123, 3, 2, 7, 7), "conv2d_same_dil": (124, 1, 2, 33, 7),
    "conv_transpose2d": (125, 1, 4, 7, 3), "conv_transpose2d_groups": (126, 3, 4, 1, 7),
    "conv_transpose2d_tiles": (127, 1, 3, 7, 33), "conv_transpose2d_tiles_pad": (128, 3, 2, 1, 7),
    "conv_transpose2d_plain": (129, 1, 2, 7, 3),
    "adaptive_avg_pool2d": (130, 1, 3, 7, 33), "adaptive_avg_pool2d_div": (131, 3, 2, 7, 3),
    "adaptive_avg_pool2d_up": (132, 1, 2, 3, 1), "adaptive_avg_pool2d_1": (133, 3, 3, 7, 33),
    "adaptive_max_pool2d": (134, 1, 3, 7, 33), "adaptive_max_pool2d_1": (135, 3, 3, 1, 7),
    "flip": (136, 3, 7, 33), "upsample_nearest_2": (137, 1, 2, 7, 3), "upsample_nearest_size": (138, 3, 2, 1, 33),
    "upsample_bilinear": (139, 1, 2, 7, 3), "upsample_bilinear_ac": (140, 3, 2, 3, 7),
    "interpolate_bilinear_size": (141, 1, 1, 7, 33), "interpolate_bilinear_size_ac": (142, 3, 1, 7, 1),
    "cumsum": (143, 3, 33), "cumsum0": (144, 33, 7),
    "argmax": (145, 7, 33), "argmin": (146, 7, 33), "topk": (147, 3, 33), "topk_smallest": (148, 7, 33),
    "transformer_encoder": (149, 3, 7, 8),
}

# Cases whose PyTorch CPU kernel runs in the dtype but rounds more than the op's result, so they
# are computed like the unsupported ones (float32 on the rounded values, the results rounded).
BILINEAR_BF16 = "upsample_bilinear2d rounds its interpolation weights to bfloat16"
F32_ODD = {(n, "bf16"): BILINEAR_BF16 for n in ("upsample_bilinear", "upsample_bilinear_ac",
                                                   "interpolate_bilinear_size", "interpolate_bilinear_size_ac")}

ODD_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
AMP_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
ST_DTYPES = {torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """The safetensors format: an 8-byte little-endian header length, the JSON header, the data."""
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for k in sorted(tensors):
        t = tensors[k].detach().contiguous()
        raw = (t.view(torch.int16) if t.dtype in (torch.float16, torch.bfloat16) else t).numpy().tobytes()
        header[k] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def odd_input(name, shape, dt):
    if shape is None:
        x = act_input().reshape(-1)
        x = torch.cat([x, torch.tensor(np.random.default_rng(2).uniform(-8, 8, 693 - x.numel()))])
        x = x.reshape(1, 3, 7, 33)
    else:
        x = rand(shape[0], *shape[1:])
    if name in ("argmax", "argmin"):
        x[1, 2] = x[1, 5] = 0.75  # a tie: the first occurrence wins
        x[2, 4] = x[2, 6] = float("nan")
    return x.to(dt)


def run_odd(name, x, f, dt, compute):
    """Runs f on x in compute (dt, or float32 on dt's values), forward and backward; the results
    in dt as save() would write them."""
    out = {}
    if isinstance(f, nn.Module):
        f = copy.deepcopy(f).to(compute)
    x = x.detach().to(compute).clone().requires_grad_(True)
    ys = f(x)
    ys = list(ys) if isinstance(ys, tuple) else [ys]
    loss = 0
    for i, y in enumerate(ys):
        out["y" if len(ys) == 1 else "y.%d" % i] = y.to(dt) if y.is_floating_point() else y
        if y.is_floating_point():
            u = torch.tensor(np.random.default_rng(99 + i).uniform(-1, 1, tuple(y.shape))).to(dt)
            out["u" if len(ys) == 1 else "u.%d" % i] = u
            loss = loss + (torch.nan_to_num(y, nan=0.0) * u.to(compute)).sum()
    if isinstance(f, nn.Module) and f.training:
        for k, v in f.state_dict().items():
            out["b." + k] = v.to(dt) if v.is_floating_point() else v
    if torch.is_tensor(loss) and loss.requires_grad:
        loss.backward()
        out["gx"] = x.grad.to(dt)
        if isinstance(f, nn.Module):
            for k, v in f.named_parameters():
                out["gp." + k] = v.grad.to(dt)
    return out


def main_odd(out):
    os.makedirs(out, exist_ok=True)
    all_cases = cases()
    for name, shape in sorted(ODD_SHAPES.items()):
        _, f64 = all_cases[name]
        for tag, dt in sorted(ODD_DTYPES.items()):
            x = odd_input(name, shape, dt)
            t = {"x": x}
            f = f64
            if isinstance(f, nn.Module):
                f = copy.deepcopy(f64).to(dt)  # the module's parameters and buffers in dt, as model.to(dt)
                for k, v in f.state_dict().items():
                    t["p." + k] = v
            try:
                if (name, tag) in F32_ODD:
                    raise RuntimeError("not implemented for " + tag + ": " + F32_ODD[name, tag])
                res, compute = run_odd(name, x, f, dt, dt), tag
            except RuntimeError as e:
                if "not implemented for" not in str(e):
                    raise
                res, compute = run_odd(name, x, f, dt, torch.float32), "f32"
            t.update(res)
            write_safetensors(os.path.join(out, "%s.%s.safetensors" % (name, tag)), t, {"compute": compute})
            print("%s.%s: computed in %s" % (name, tag, compute))


# The autocast cases: those with a contraction (run in the low dtype) and norms (in float32).
AMP_CASES = ["conv1d", "conv2d_rect", "conv_transpose2d", "transformer_encoder", "batchnorm2d", "groupnorm"]

# The contractions autocast runs in the low dtype, by where PyTorch's modules look them up.
LOW_OPS = [(F, "linear"), (F, "conv1d"), (F, "conv2d"), (F, "conv_transpose2d"), (torch, "matmul"), (torch, "bmm"),
           (torch, "baddbmm")]


class autocast_like_cuda:
    """Patches LOW_OPS so that they compute as autocast's lower-precision list on CUDA: float
    operands rounded to dt, float32 accumulation, the result rounded to dt (held in float32)."""

    def __init__(self, dt):
        self.dt = dt

    def __enter__(self):
        self.saved = [(m, n, getattr(m, n)) for m, n in LOW_OPS]
        r = self.round
        for m, n, f in self.saved:
            setattr(m, n, lambda *a, f=f, **k: r(f(*[r(t) for t in a], **{key: r(v) for key, v in k.items()})))

    def __exit__(self, *exc):
        for m, n, f in self.saved:
            setattr(m, n, f)

    def round(self, t):
        if torch.is_tensor(t) and t.is_floating_point():
            return t.to(self.dt).to(torch.float32)
        return t


def run_f32(x, f, amp_dt=None):
    f = copy.deepcopy(f).float() if isinstance(f, nn.Module) else f
    x = x.detach().float().clone().requires_grad_(True)
    u = None
    if amp_dt is None:
        y = f(x)
    else:
        with autocast_like_cuda(amp_dt):
            y = f(x)
    u = torch.tensor(np.random.default_rng(99).uniform(-1, 1, tuple(y.shape))).float()
    (y * u).sum().backward()
    out = {"y": y, "u": u}
    for k, v in f.named_parameters():
        out["gp." + k] = v.grad
    return out


def main_amp(out):
    os.makedirs(out, exist_ok=True)
    all_cases = cases()
    for name in AMP_CASES:
        _, f = all_cases[name]
        shape = ODD_SHAPES[name]
        x = rand(shape[0], *shape[1:]).float()
        ref = run_f32(x, f)
        for tag, dt in sorted(AMP_DTYPES.items()):
            t = {"x": x}
            for k, v in f.state_dict().items():
                t["p." + k] = v.float() if v.is_floating_point() else v
            t.update(run_f32(x, f, dt))
            t["f32.y"] = ref["y"]
            for k, v in ref.items():
                if k.startswith("gp."):
                    t["f32." + k] = v
            write_safetensors(os.path.join(out, "%s.amp_%s.safetensors" % (name, tag)), t, {"autocast": tag})
            print("%s.amp_%s" % (name, tag))


def main():
    if sys.argv[1] == "--amp":
        main_amp(sys.argv[2])
        return
    if sys.argv[1] == "--odd":
        main_odd(sys.argv[2])
        return
    out = sys.argv[1]
    for name, (x, f) in sorted(cases().items()):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        x = x.clone().requires_grad_(True)
        save(d, "x", x)
        if isinstance(f, nn.Module):
            for k, v in f.state_dict().items():
                save(d, "p." + k, v.double() if v.is_floating_point() else v)
        ys = f(x)
        ys = list(ys) if isinstance(ys, tuple) else [ys]
        if isinstance(f, nn.Module) and f.training:
            for k, v in f.state_dict().items():
                save(d, "b." + k, v.double() if v.is_floating_point() else v)
        loss = 0
        for i, y in enumerate(ys):
            save(d, "y" if len(ys) == 1 else "y.%d" % i, y)
            if y.is_floating_point():
                u = torch.tensor(np.random.default_rng(99 + i).uniform(-1, 1, tuple(y.shape)))
                save(d, "u" if len(ys) == 1 else "u.%d" % i, u)
                loss = loss + (torch.nan_to_num(y, nan=0.0) * u).sum()
        if torch.is_tensor(loss) and loss.requires_grad:
            loss.backward()
            save(d, "gx", x.grad)
            if isinstance(f, nn.Module):
                for k, v in f.named_parameters():
                    save(d, "gp." + k, v.grad)


if __name__ == "__main__":
    main()
