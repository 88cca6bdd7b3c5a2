#!/usr/bin/env python3
"""Reference layers for quant's tests: random linear layers quantized with torch and packed into
the GPTQ and AWQ layouts by the published packing code's logic, with their dequantized weights.

GPTQ (AutoGPTQ's QuantLinear.pack, as transformers' GPTQ integration stores it): qweight int32
[K*bits/32, N] packed along K, qzeros int32 [G, N*bits/32] packed along N and stored minus one,
scales f16 [G, N], g_idx int32 [K]; with act-order (desc_act) the input channels are ranked by a
random Hessian diagonal and g_idx[k] is the group of k's rank, as GPTQ's fasterquant assigns it.
AWQ (AutoAWQ's WQLinear_GEMM.from_linear): qweight int32 [K, N/8] packed along N in the order
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7], qzeros int32 [G, N/8] likewise, scales f16 [G, N].

The dequantized weight is computed from the packed tensors by the published unpacking (AutoGPTQ's
shift-and-mask forward path, its zeros plus one; AutoAWQ's unpack_awq and reverse_awq_order) and
(q - z).float() * scale.float() in float32, as nn.Linear's [N, K].

Run: /usr/bin/python3 scripts/quant_reference.py quant/testdata/layouts.safetensors
"""
import json
import struct
import sys

import torch

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]

# name, method, bits, group size (-1 per channel), act-order, N, K
CASES = [
    ("gptq4_g32", "gptq", 4, 32, False, 16, 64),
    ("gptq4_g128", "gptq", 4, 128, False, 8, 256),
    ("gptq4_channel", "gptq", 4, -1, False, 24, 64),
    ("gptq4_g32_actorder", "gptq", 4, 32, True, 16, 96),
    ("gptq8_g32", "gptq", 8, 32, False, 12, 64),
    ("gptq8_g128_actorder", "gptq", 8, 128, True, 8, 256),
    ("gptq8_channel", "gptq", 8, -1, False, 4, 32),
    ("awq4_g32", "awq", 4, 32, False, 16, 64),
    ("awq4_g128", "awq", 4, 128, False, 32, 256),
]


def quantizer_params(w, bits, sym):
    """GPTQ's Quantizer.find_params on rows of w: scale and zero per row."""
    maxq = 2 ** bits - 1
    xmin = torch.minimum(w.min(1).values, torch.zeros(w.shape[0]))
    xmax = torch.maximum(w.max(1).values, torch.zeros(w.shape[0]))
    if sym:
        xmax = torch.maximum(xmin.abs(), xmax)
        xmin = -xmax
    both = (xmin == 0) & (xmax == 0)
    xmin[both], xmax[both] = -1, 1
    scale = ((xmax - xmin) / maxq).half().float()  # stored as f16: round against the stored value
    if sym:
        zero = torch.full_like(scale, (maxq + 1) // 2)
    else:
        zero = torch.round(-xmin / scale).clamp(0, maxq)
    return scale, zero


def quantize(name, method, bits, group, actorder, n, k, gen):
    maxq = 2 ** bits - 1
    w = torch.randn(n, k, generator=gen) * 0.1
    w[0, :8] = 0  # an all-zero stretch and exact zeros
    size = k if group == -1 else group
    groups = (k + size - 1) // size
    sym = name.endswith("_channel")
    if actorder:
        h = torch.rand(k, generator=gen)
        perm = torch.argsort(h, descending=True)
        g_idx = torch.empty(k, dtype=torch.int32)
        g_idx[perm] = torch.arange(k, dtype=torch.int32) // size
    else:
        g_idx = torch.arange(k, dtype=torch.int32) // size
    scales = torch.empty(groups, n)
    zeros = torch.empty(groups, n, dtype=torch.int32)
    for g in range(groups):
        s, z = quantizer_params(w[:, g_idx == g], bits, sym)
        scales[g], zeros[g] = s, z.to(torch.int32)
    # intweight [K, N], as AutoGPTQ's pack builds it column by column
    sc, zc = scales[g_idx.long()], zeros[g_idx.long()].float()
    intweight = torch.clamp(torch.round(w.t() / sc) + zc, 0, maxq).to(torch.int32)
    if method == "gptq":
        return pack_gptq(intweight, zeros, scales, g_idx, bits)
    return pack_awq(intweight, zeros, scales, bits)


def pack_gptq(intweight, zeros, scales, g_idx, bits):
    k, n = intweight.shape
    per = 32 // bits
    iw = intweight.numpy().astype("uint32")
    qweight = [[0] * n for _ in range(k // per)]
    row, i = 0, 0
    while row < k // per:
        for j in range(i, i + per):
            for c in range(n):
                qweight[row][c] |= int(iw[j][c]) << (bits * (j - i))
        i += per
        row += 1
    z = ((zeros - 1) & (2 ** bits - 1)).numpy().astype("uint32")  # the classic format stores zeros minus one
    qzeros = [[0] * (n // per) for _ in range(z.shape[0])]
    col, i = 0, 0
    while col < n // per:
        for j in range(i, i + per):
            for g in range(z.shape[0]):
                qzeros[g][col] |= int(z[g][j]) << (bits * (j - i))
        i += per
        col += 1
    return {
        "qweight": to_i32(qweight, (k // per, n)),
        "qzeros": to_i32(qzeros, (z.shape[0], n // per)),
        "scales": scales.half(),
        "g_idx": g_idx,
    }


def pack_awq(intweight, zeros, scales, bits):
    k, n = intweight.shape
    per = 32 // bits

    def pack(m):
        rows = m.shape[0]
        out = [[0] * (n // per) for _ in range(rows)]
        for col in range(n // per):
            for i in range(per):
                src = m[:, col * per + AWQ_ORDER[i]]
                for r in range(rows):
                    out[r][col] |= int(src[r]) << (i * bits)
        return to_i32(out, (rows, n // per))

    return {"qweight": pack(intweight), "qzeros": pack(zeros), "scales": scales.half()}


def to_i32(rows, shape):
    flat = [v - (1 << 32) if v >= 1 << 31 else v for r in rows for v in r]
    return torch.tensor(flat, dtype=torch.int32).reshape(shape)


def dequant_gptq(t, bits):
    qweight, qzeros, scales, g_idx = t["qweight"], t["qzeros"], t["scales"], t["g_idx"]
    wf = torch.tensor(list(range(0, 32, bits)), dtype=torch.int32).unsqueeze(0)
    small = torch.int16 if bits == 8 else torch.int8
    zeros = torch.bitwise_right_shift(torch.unsqueeze(qzeros, 2).expand(-1, -1, 32 // bits), wf.unsqueeze(0)).to(small)
    zeros = torch.bitwise_and(zeros + 1, 2 ** bits - 1).reshape(scales.shape)
    weight = torch.bitwise_right_shift(torch.unsqueeze(qweight, 1).expand(-1, 32 // bits, -1), wf.unsqueeze(-1)).to(small)
    weight = torch.bitwise_and(weight, 2 ** bits - 1).reshape(-1, qweight.shape[1])
    g = g_idx.long()
    return ((weight - zeros[g]).float() * scales[g].float()).t().contiguous()


def dequant_awq(t, bits, group):
    qweight, qzeros, scales = t["qweight"], t["qzeros"], t["scales"]
    shifts = torch.arange(0, 32, bits)
    iw = torch.bitwise_right_shift(qweight[:, :, None], shifts[None, None, :]).to(torch.int8).view(qweight.shape[0], -1)
    iz = torch.bitwise_right_shift(qzeros[:, :, None], shifts[None, None, :]).to(torch.int8).view(qzeros.shape[0], -1)
    order = torch.arange(iw.shape[-1]).view(-1, 32 // bits)[:, AWQ_REVERSE_ORDER].view(-1)
    iw = torch.bitwise_and(iw[:, order], 2 ** bits - 1)
    iz = torch.bitwise_and(iz[:, order], 2 ** bits - 1)
    iz, sc = iz.repeat_interleave(group, dim=0), scales.repeat_interleave(group, dim=0)
    return ((iw - iz).float() * sc.float()).t().contiguous()


ST_DTYPES = {torch.int32: ("I32", 4), torch.float16: ("F16", 2), torch.float32: ("F32", 4)}


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        code, size = ST_DTYPES[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    gen = torch.Generator().manual_seed(28)
    tensors, cases = {}, []
    for name, method, bits, group, actorder, n, k in CASES:
        t = quantize(name, method, bits, group, actorder, n, k, gen)
        deq = dequant_gptq(t, bits) if method == "gptq" else dequant_awq(t, bits, group)
        for suffix, v in t.items():
            tensors[f"{name}.{suffix}"] = v
        tensors[f"{name}.dequantized"] = deq
        cases.append({"name": name, "quant_method": method, "bits": bits, "group_size": group,
                      "desc_act": actorder, "out": n, "in": k})
    write_safetensors(sys.argv[1], tensors, {"cases": json.dumps(cases)})


if __name__ == "__main__":
    main()
