// Package lmtest holds what lm's tests and benchmarks share: weights that are a hash of the
// tensor's name (scripts/lm_reference.py computes the same values, so the PyTorch reference and
// the Go tests use one checkpoint without committing it) and the reference's digests.
package lmtest

import (
	"hash/fnv"
	"strings"
)

// HashWeights returns the n f32 values of the tensor called name: murmur3's finalizer over the
// name's FNV-1a hash and the element index, mapped to [-0.5, 0.5) with 24 bits, then scaled by
// the tensor's role (a norm's gain near 1, biases small, embeddings wide).
func HashWeights(name string, n int) []float32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	seed := h.Sum32()
	off, spread := scaleOf(name)
	out := make([]float32, n)
	for i := range out {
		x := seed ^ uint32(uint64(i)*0x9E3779B9)
		x ^= x >> 16
		x *= 0x85EBCA6B
		x ^= x >> 13
		x *= 0xC2B2AE35
		x ^= x >> 16
		u := float64(x>>8)/float64(1<<24) - 0.5
		out[i] = float32(off + 2*spread*u)
	}
	return out
}

func scaleOf(name string) (offset, spread float64) {
	switch {
	case strings.HasSuffix(name, "norm.weight"), strings.Contains(name, ".ln_") && strings.HasSuffix(name, ".weight"):
		return 1, 0.2
	case strings.HasSuffix(name, ".bias"):
		return 0, 0.1
	case strings.Contains(name, "wte"), strings.Contains(name, "wpe"), strings.Contains(name, "embed_tokens"):
		return 0, 1
	}
	return 0, 0.25
}
