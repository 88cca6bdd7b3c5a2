// Package swish is a two-layer MLP whose activation is a CUDA kernel of our own (swish.cu,
// compiled by NVRTC when the model is built), with a Go function saying what it computes for
// the reference interpreter and `gcomp check`.
package swish

import (
	"math"

	"github.com/gcomp/gcomp/frontend"
)

// Model is x[64,256] → Linear(256, 512) → swish (CUDA) → Linear(512, 10).
func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(64), 256)
	w1 := b.Param("fc1.weight", frontend.T(frontend.F32, 256, 512), frontend.DefaultUniform(256))
	b1 := b.Param("fc1.bias", frontend.T(frontend.F32, 512), frontend.DefaultUniform(256))
	w2 := b.Param("fc2.weight", frontend.T(frontend.F32, 512, 10), frontend.DefaultUniform(512))
	h := x.Matmul(w1).Add(b1)
	a := b.Custom(frontend.Kernel{
		Name:      "swish",
		File:      "swish.cu",
		Scalars:   []frontend.Scalar{frontend.IntArg(h.Type().Shape.NumElements())},
		Reference: swish,
	}, h)
	b.Output("logits", a.Matmul(w2))
}

// swish is what swish.cu computes: x·σ(x), rounded to f32. (The kernel's __expf is within
// 2 ulp of exp, well inside gcomp check's f32 tolerance.)
func swish(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
	y := frontend.NewHostTensor(in[0].Type)
	for i, v := range in[0].F {
		y.F[i] = float64(float32(v / (1 + math.Exp(-v))))
	}
	return y
}
