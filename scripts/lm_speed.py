#!/usr/bin/env python3
"""Greedy tokens/s of scripts/lm_reference.py's PyTorch models on the CPU, beside which docs/perf.md
puts gcomp's reference interpreter on the same checkpoints (gcomp generate --device ref --stats).
PyTorch recomputes the whole sequence per token (the reference's definition; no KV cache), in
float64 as the reference runs and in float32.

Run: /usr/bin/python3 scripts/lm_speed.py
"""
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import lm_reference as R  # noqa: E402

torch.set_num_threads(1)
for c in R.CASES:
    cfg = c["config"]
    gpt2 = cfg["model_type"] == "gpt2"
    W = (R.gpt2_weights if gpt2 else R.llama_weights)(cfg, c["dtype"])
    fwd = R.gpt2_forward if gpt2 else R.llama_forward
    ids = list(c["prompt"])
    n = 32
    t = time.time()
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(torch.argmax(fwd(cfg, W, torch.tensor(ids))[-1])))
    print(f"{c['name']}: {n / (time.time() - t):.1f} tokens/s (float64, one thread, recomputing the sequence per token)")
