#!/usr/bin/env python3
"""Regenerates the .npy and .safetensors fixtures of package tensorio.

Run from this directory: python3 gen.py
Needs NumPy (Debian: python3-numpy). Writes NAME.npy files with NumPy's own writer and manifest.txt,
one line per fixture: NAME DTYPE SHAPE HEX, where SHAPE is comma-separated
("-" for a scalar) and HEX is the array's little-endian C-order bytes.
The safetensors fixture is laid out the way the reference writer does it
(data sorted by alignment, then name; header padded to 8 bytes).
"""
import json
import struct

import numpy as np

GO_DTYPE = {
    "float32": "f32", "float16": "f16", "float64": "f64", "int32": "i32",
    "uint32": "u32", "int64": "i64", "int8": "i8", "uint8": "u8", "bool": "bool",
}


def values(shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    v = np.arange(n, dtype=np.int64) - n // 3
    if np.dtype(dtype) == np.bool_:
        return (v % 3 == 0).reshape(shape)
    if np.dtype(dtype).kind == "u":
        v = v + n
    if np.dtype(dtype).kind == "f":
        return (v * 0.5).astype(dtype).reshape(shape)
    return v.astype(dtype).reshape(shape)


manifest = []


def save(name, arr, version=None, fortran=False):
    if fortran:
        arr = np.asfortranarray(arr)
    with open(name + ".npy", "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
    le = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"))
    shape = ",".join(str(d) for d in arr.shape) or "-"
    manifest.append(f"{name} {GO_DTYPE[arr.dtype.name]} {shape} {le.tobytes().hex()}")


for dt in ["<f4", "<f8", "<f2", "<i4", "<i8", "|u1", "|b1", "|i1", "<u4"]:
    name = np.dtype(dt).name
    save(name + "_2x3", values((2, 3), dt))
save("f32_scalar", np.array(2.5, dtype="<f4"))
save("i64_scalar", np.array(-7, dtype="<i8"))
save("f32_0x3", values((0, 3), "<f4"))
save("f32_5", values((5,), "<f4"))
save("f32_2x3x4_fortran", values((2, 3, 4), "<f4"), fortran=True)
save("i32_3x2_fortran", values((3, 2), "<i4"), fortran=True)
save("f32_be_2x3", values((2, 3), ">f4"))
save("i64_be_4", values((4,), ">i8"))
save("f16_be_3", values((3,), ">f2"))
save("f64_v2_2x2", values((2, 2), "<f8"), version=(2, 0))
save("u8_v3_3", values((3,), "|u1"), version=(3, 0))

with open("manifest.txt", "w") as f:
    f.write("\n".join(manifest) + "\n")


def safetensors(path, tensors, metadata):
    """tensors: name -> (ST dtype, shape, raw bytes, alignment)."""
    order = sorted(tensors, key=lambda k: (-tensors[k][3], k))
    header, off = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for k in order:
        dt, shape, raw, _ = tensors[k]
        header[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for k in order:
            f.write(tensors[k][2])


w = values((2, 3), "<f4")
bf16 = (w.view("<u4") >> 16).astype("<u2")  # truncation of f32 to bf16
safetensors("mixed.safetensors", {
    "weight": ("F32", w.shape, w.tobytes(), 4),
    "bias": ("F16", (3,), values((3,), "<f2").tobytes(), 2),
    "emb.bf16": ("BF16", (2, 3), bf16.tobytes(), 2),
    "steps": ("I64", (), np.array(42, "<i8").tobytes(), 8),
    "mask": ("BOOL", (4,), values((4,), "|b1").tobytes(), 1),
    "empty": ("F32", (0, 2), b"", 4),
}, {"format": "pt", "note": "fixture"})
