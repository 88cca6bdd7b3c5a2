// Package lm runs decoder-only language models (GPT-2 and the Llama family) for text generation:
// two compiled programs over one static KV cache, sampling, and a token-by-token generation loop.
//
// A model is two graphs built by examples/gpt2 or examples/llama with Hugging Face's parameter
// names, sharing weights and one KV cache (gpt-fast's design), kept as a state per layer L and
// per keys or values, kv_cache.L.k and kv_cache.L.v [batch, kv_heads, max_seq, head_dim]:
//
//	prefill_T: tokens i64[batch, T], pos i64[batch], kv_cache.* → logits f32[batch, vocab], new_kv_cache.*
//	decode:    tokens i64[batch, 1], pos i64[batch], kv_cache.* → logits f32[batch, vocab], new_kv_cache.*
//
// Both write the step's keys and values into the cache at positions pos[b], pos[b]+1, … (with
// update_slice, which compiled writes those rows in place: each new_kv_cache.L.* output is its
// input's buffer) and mask
// attention by position (key s is seen by the query at position p when s ≤ p), not by shape, so
// one decode program serves every step of every sequence, each sequence of a batch at its own
// position. A prefill program is compiled per prompt length on first use.
//
// An [Engine] holds the programs on one device. On the reference interpreter the cache is a host
// tensor passed from run to run. On a compiled device (the simulator or a GPU) it never leaves
// device memory: the decode program keeps it as state (each new_kv_cache.L.* output is written
// in place of its kv_cache.L.* input, so nothing moves between runs), each prefill program reads
// and writes those same buffers in place and shares the decode program's weights, and on a GPU the decode step replays
// as one CUDA graph.
//
// A packed engine (EngineOptions.Packed) builds its decode program once over a symbolic batch
// in [1, Batch] and decodes the first n slots only, so a step costs what its n rows cost in
// attention and the KV write; Engine.MoveSlot copies a sequence's cache rows to another slot on
// the device, so a server keeps its running sequences in those first slots (packed.go).
//
//	m, _ := lm.New(cfg, weights)
//	e, _ := m.Open(lm.EngineOptions{Device: "sim"})
//	for tok, err := range e.Generate(ctx, promptIDs, lm.GenerateOptions{MaxNewTokens: 32}) {
//		...
//	}
//
// Sampling follows Hugging Face's generate: repetition penalty, temperature, top-k, top-p, then
// a draw seeded by Sampling.Seed, so the same seed gives the same tokens; temperature 0 is greedy.
//
// The reference in testdata/reference.json comes from PyTorch models written after transformers'
// modeling_gpt2.py and modeling_llama.py (scripts/lm_reference.py), with weights that are a hash of
// each tensor's name so that the Go tests build the same checkpoint without committing it.
package lm
