#!/usr/bin/env python3
"""Reference logits for lm's tests: tiny GPT-2 and Llama models in PyTorch, float64.

The models follow Hugging Face's published definitions (transformers' modeling_gpt2.py and
modeling_llama.py): GPT-2's Conv1D weights [in, out], tanh GELU, tied lm_head; Llama's RMSNorm,
rotary embeddings in the rotate-half convention, grouped-query attention and SwiGLU MLP. Weights
are not random draws but a hash of the tensor's name and the element's index (lm.HashWeights in
Go computes the same f32 values), so the Go tests write the same checkpoint themselves and only
these small digests are committed.

Every step recomputes the whole sequence (no cache): the Go side's KV-cache decode must equal it.

Run: /usr/bin/python3 scripts/lm_reference.py > lm/testdata/reference.json
"""
import json
import math
import sys

import numpy as np
import torch

MASK32 = 0xFFFFFFFF


def fnv1a(s):
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & MASK32
    return h


def mix(x):
    # murmur3's 32-bit finalizer
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & MASK32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & MASK32
    x ^= x >> 16
    return x


def scale_of(name):
    if name.endswith("norm.weight") or ".ln_" in name and name.endswith(".weight") or name.endswith("ln_f.weight"):
        return 1.0, 0.2  # offset, spread: a norm's gain near 1
    if name.endswith(".bias"):
        return 0.0, 0.1
    if "wte" in name or "wpe" in name or "embed_tokens" in name:
        return 0.0, 1.0
    return 0.0, 0.25


def hash_weights(name, shape):
    n = int(np.prod(shape)) if len(shape) else 1
    seed = fnv1a(name)
    i = np.arange(n, dtype=np.uint64)
    x = (np.uint64(seed) ^ ((i * np.uint64(0x9E3779B9)) & np.uint64(MASK32))) & np.uint64(MASK32)
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & np.uint64(MASK32)
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & np.uint64(MASK32)
    x ^= x >> np.uint64(16)
    u = (x >> np.uint64(8)).astype(np.float64) / float(1 << 24) - 0.5  # in [-0.5, 0.5)
    off, spread = scale_of(name)
    return (off + 2 * spread * u).astype(np.float32).reshape(shape)


def weight(name, shape, dtype):
    w = hash_weights(name, shape)
    t = torch.from_numpy(w)
    if dtype == "bf16":
        t = t.to(torch.bfloat16)
    elif dtype == "f16":
        t = t.to(torch.float16)
    return t.to(torch.float64)


# ---- GPT-2 (transformers/models/gpt2/modeling_gpt2.py) ----

def gpt2_forward(cfg, W, ids):
    d, H = cfg["n_embd"], cfg["n_head"]
    hd = d // H
    T = len(ids)
    x = W["transformer.wte.weight"][ids] + W["transformer.wpe.weight"][torch.arange(T)]
    eps = cfg["layer_norm_epsilon"]

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (d,), W[p + ".weight"], W[p + ".bias"], eps)

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(cfg["n_layer"]):
        p = f"transformer.h.{l}."
        a = ln(x, p + "ln_1")
        qkv = a @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(d, dim=-1)
        q, k, v = [t.view(T, H, hd).transpose(0, 1) for t in (q, k, v)]
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~causal, float("-inf"))
        o = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(T, d)
        x = x + o @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        m = ln(x, p + "ln_2")
        m = gelu_new(m @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"])
        x = x + m @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = ln(x, "transformer.ln_f")
    return x @ W["transformer.wte.weight"].T


def gpt2_weights(cfg, dtype):
    d, V, P, L = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"], cfg["n_layer"]
    inner = cfg.get("n_inner") or 4 * d
    shapes = {"transformer.wte.weight": (V, d), "transformer.wpe.weight": (P, d),
              "transformer.ln_f.weight": (d,), "transformer.ln_f.bias": (d,)}
    for l in range(L):
        p = f"transformer.h.{l}."
        shapes.update({p + "ln_1.weight": (d,), p + "ln_1.bias": (d,), p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
                       p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
                       p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
                       p + "mlp.c_fc.weight": (d, inner), p + "mlp.c_fc.bias": (inner,),
                       p + "mlp.c_proj.weight": (inner, d), p + "mlp.c_proj.bias": (d,)})
    return {n: weight(n, s, dtype) for n, s in shapes.items()}


# ---- Llama (transformers/models/llama/modeling_llama.py) ----

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_forward(cfg, W, ids):
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = d // H
    T = len(ids)
    eps = cfg["rms_norm_eps"]
    # inv_freq in float32 as transformers computes it, the angles and their cos/sin in float64
    inv_freq = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq.to(torch.float64))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rms(x, p):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * W[p]

    x = W["model.embed_tokens.weight"][ids]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    bias = cfg.get("attention_bias", False) or cfg["model_type"] == "qwen2"
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms(x, p + "input_layernorm.weight")

        def proj(n):
            y = a @ W[p + f"self_attn.{n}_proj.weight"].T
            return y + W[p + f"self_attn.{n}_proj.bias"] if bias else y

        q = proj("q").view(T, H, hd).transpose(0, 1)
        k = proj("k").view(T, KV, hd).transpose(0, 1)
        v = proj("v").view(T, KV, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~causal, float("-inf"))
        o = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(T, H * hd)
        x = x + o @ W[p + "self_attn.o_proj.weight"].T
        if cfg.get("attention_bias", False):
            x = x + W[p + "self_attn.o_proj.bias"]
        m = rms(x, p + "post_attention_layernorm.weight")
        g = torch.nn.functional.silu(m @ W[p + "mlp.gate_proj.weight"].T) * (m @ W[p + "mlp.up_proj.weight"].T)
        x = x + g @ W[p + "mlp.down_proj.weight"].T
    x = rms(x, "model.norm.weight")
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    return x @ head.T


def llama_weights(cfg, dtype):
    d, H, V, L, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    KV = cfg.get("num_key_value_heads") or H
    hd = d // H
    bias = cfg.get("attention_bias", False) or cfg["model_type"] == "qwen2"
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,)}
    if not cfg.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (V, d)
    for l in range(L):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (H * hd, d), p + "self_attn.k_proj.weight": (KV * hd, d),
                       p + "self_attn.v_proj.weight": (KV * hd, d), p + "self_attn.o_proj.weight": (d, H * hd),
                       p + "mlp.gate_proj.weight": (I, d), p + "mlp.up_proj.weight": (I, d), p + "mlp.down_proj.weight": (d, I)})
        if bias:
            shapes.update({p + "self_attn.q_proj.bias": (H * hd,), p + "self_attn.k_proj.bias": (KV * hd,), p + "self_attn.v_proj.bias": (KV * hd,)})
        if cfg.get("attention_bias", False):
            shapes[p + "self_attn.o_proj.bias"] = (d,)
    return {n: weight(n, s, dtype) for n, s in shapes.items()}


CASES = [
    {"name": "gpt2", "dtype": "f32", "prompt": [464, 2068, 7586, 21831, 18045], "steps": 32,
     "config": {"model_type": "gpt2", "vocab_size": 50257, "n_embd": 32, "n_layer": 2, "n_head": 4,
                "n_positions": 64, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
                "bos_token_id": 50256, "eos_token_id": 50256}},
    {"name": "llama", "dtype": "f32", "prompt": [1, 17, 250, 3, 99, 42, 7], "steps": 32,
     "config": {"model_type": "llama", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 96,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
                "bos_token_id": 1, "eos_token_id": 2}},
    {"name": "llama_bf16_sharded", "dtype": "bf16", "prompt": [1, 5, 6, 7, 300], "steps": 32,
     "config": {"model_type": "llama", "vocab_size": 320, "hidden_size": 64, "intermediate_size": 96,
                "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2,
                "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
                "hidden_act": "silu", "tie_word_embeddings": True, "attention_bias": False,
                "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}},
]

CASES += [
    {"name": "llama_attention_bias", "dtype": "f16", "prompt": [1, 9, 8, 7], "steps": 16,
     "config": {"model_type": "llama", "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64,
                "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 1,
                "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": True,
                "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16"}},
    {"name": "qwen2", "dtype": "f32", "prompt": [3, 4, 5], "steps": 16,
     "config": {"model_type": "qwen2", "vocab_size": 96, "hidden_size": 48, "intermediate_size": 80,
                "num_hidden_layers": 1, "num_attention_heads": 6, "num_key_value_heads": 2,
                "max_position_embeddings": 32, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                "hidden_act": "silu", "tie_word_embeddings": True,
                "bos_token_id": 0, "eos_token_id": 95, "torch_dtype": "float32"}},
]

PROBE = 64  # logits kept per step for the large vocabulary: these indices, the top 8, and the norms


def main():
    out = []
    for c in CASES:
        cfg = c["config"]
        gpt2 = cfg["model_type"] == "gpt2"
        W = (gpt2_weights if gpt2 else llama_weights)(cfg, c["dtype"])
        fwd = gpt2_forward if gpt2 else llama_forward
        ids = list(c["prompt"])
        steps = []
        V = cfg["vocab_size"]
        probe = sorted(set((np.arange(PROBE) * 7919 % V).tolist()))
        with torch.no_grad():
            for _ in range(c["steps"] + 1):
                logits = fwd(cfg, W, torch.tensor(ids))[-1]
                top = torch.topk(logits, 8)
                step = {"argmax": int(torch.argmax(logits)),
                        "norm": float(torch.linalg.norm(logits)),
                        "top_ids": [int(i) for i in top.indices], "top": [float(v) for v in top.values]}
                if V <= 1024:
                    step["logits"] = [float(v) for v in logits]
                else:
                    step["probe"] = [float(logits[i]) for i in probe]
                steps.append(step)
                ids.append(step["argmax"])
        out.append({"name": c["name"], "dtype": c["dtype"], "config": cfg, "prompt": c["prompt"],
                    "probe_ids": probe, "generated": ids[len(c["prompt"]):len(c["prompt"]) + c["steps"]], "steps": steps})
    json.dump({"generator": "scripts/lm_reference.py", "cases": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
