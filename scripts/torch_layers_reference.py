#!/usr/bin/env python3
"""PyTorch's values for the layers of frontend and frontend/nn, forward and backward.

For every case below this writes OUT_DIR/CASE/: x.npy (the input), p.NAME.npy (each parameter
or buffer, under its state_dict key), y.npy (the output; y.N.npy for several), and, for
differentiable cases, gx.npy and gp.NAME.npy: the gradients of sum(y·u) with u = u.npy, a fixed
upstream gradient. Everything is float64, computed by PyTorch in float64 (eval mode). The Go
tests (frontend/nn) build the same layer with gcomp's modules, bind these values and compare,
forward on the reference interpreter and backward through passes/autodiff.

Usage: torch_layers_reference.py OUT_DIR   (Debian's python3-torch and python3-numpy)
"""
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


def main():
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
