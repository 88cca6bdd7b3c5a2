#!/usr/bin/env python3
"""Writes small models of onnxruntime's MatMulNBits contrib op (com.microsoft) with random
packed weights, their inputs and the outputs of a NumPy reference written from the op's spec.

MatMulNBits: Y = A @ dequant(B)^T + bias. B is uint8 [N, n_blocks, blob_size] with
n_blocks = K / block_size and blob_size = block_size * bits / 8; codes are packed low bits
first along K (4 bits: element 2i of a block is byte i's low nibble, 2i+1 its high nibble).
scales are [N, n_blocks]; zero_points are uint8 [N, ceil(n_blocks * bits / 8)] packed the
same way along the blocks (a row's last byte padded), default 2^(bits-1).
w[n, k] = (q[n, k] - zero[n, k // block_size]) * scales[n, k // block_size].

Beside each NAME_opset13.onnx it writes NAME_inputs/A.npy and NAME_outputs/Y.npy, where the
ONNX suite's TestExported finds them (reference interpreter and simulator against NumPy).

Run: /usr/bin/python3 scripts/matmulnbits_models.py frontend/onnx/suite/testdata/exported
Needs Debian's python3-onnx and python3-numpy; no onnxruntime.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name, A's shape, N, K, bits, block_size, zero points, bias
CASES = [
    ("matmulnbits4", (1, 256), 128, 256, 4, 32, False, False),
    ("matmulnbits4_zp", (1, 112), 64, 112, 4, 16, True, True),
    ("matmulnbits8", (2, 3, 64), 16, 64, 8, 32, False, True),
    ("matmulnbits8_zp", (4, 128), 48, 128, 8, 16, True, False),
]


def pack_along(codes, bits):
    """Packs the last axis of codes (ints < 2^bits) into bytes, low bits first, padding the
    last byte of each row."""
    per = 8 // bits
    pad = (-codes.shape[-1]) % per
    c = np.concatenate([codes, np.zeros(codes.shape[:-1] + (pad,), codes.dtype)], axis=-1)
    c = c.reshape(c.shape[:-1] + (c.shape[-1] // per, per)).astype(np.uint32)
    out = np.zeros(c.shape[:-1], np.uint32)
    for j in range(per):
        out |= c[..., j] << (bits * j)
    return out.astype(np.uint8)


def unpack_along(packed, bits, count):
    per = 8 // bits
    p = packed.astype(np.uint32)
    parts = [(p >> (bits * j)) & ((1 << bits) - 1) for j in range(per)]
    u = np.stack(parts, axis=-1).reshape(packed.shape[:-1] + (packed.shape[-1] * per,))
    return u[..., :count].astype(np.int64)


def reference(a, b, scales, zp, bias, n, k, bits, bs):
    """The spec's dequantization, from the packed tensors, in float64."""
    blocks = k // bs
    q = unpack_along(b, bits, bs).reshape(n, k)  # b is [N, n_blocks, blob]
    if zp is None:
        z = np.full((n, blocks), 1 << (bits - 1), np.int64)
    else:
        z = unpack_along(zp, bits, blocks)
    zk = np.repeat(z, bs, axis=1)
    sk = np.repeat(scales.astype(np.float64), bs, axis=1)
    w = (q - zk) * sk
    y = a.astype(np.float64).reshape(-1, k) @ w.T
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y.reshape(a.shape[:-1] + (n,)).astype(np.float32)


def main(out):
    rng = np.random.default_rng(0)
    for name, ashape, n, k, bits, bs, with_zp, with_bias in CASES:
        blocks = k // bs
        codes = rng.integers(0, 1 << bits, size=(n, blocks, bs))
        b = pack_along(codes, bits)  # [N, n_blocks, blob]
        scales = (rng.random((n, blocks)) * 0.02 + 0.005).astype(np.float32)
        zp = pack_along(rng.integers(0, 1 << bits, size=(n, blocks)), bits) if with_zp else None
        bias = rng.standard_normal(n).astype(np.float32) if with_bias else None
        a = rng.standard_normal(ashape).astype(np.float32)
        y = reference(a, b, scales, zp, bias, n, k, bits, bs)

        inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "scales")]
        ins = ["A", "B", "scales"]
        if zp is not None:
            inits.append(numpy_helper.from_array(zp, "zero_points"))
            ins.append("zero_points")
        if bias is not None:
            if zp is None:
                ins.append("")
            ins += ["", "bias"]
            inits.append(numpy_helper.from_array(bias, "bias"))
        node = helper.make_node("MatMulNBits", ins, ["Y"], domain="com.microsoft", name="q_proj",
                                K=k, N=n, bits=bits, block_size=bs, accuracy_level=4)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(ashape))],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(y.shape))],
            inits)
        model = helper.make_model(graph, producer_name="matmulnbits_models.py",
                                  opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
        onnx.save(model, os.path.join(out, name + "_opset13.onnx"))
        for sub, arr, what in (("_inputs", a, "A"), ("_outputs", y, "Y")):
            d = os.path.join(out, name + sub)
            os.makedirs(d, exist_ok=True)
            np.save(os.path.join(d, what + ".npy"), arr)


if __name__ == "__main__":
    main(sys.argv[1])
