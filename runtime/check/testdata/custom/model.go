package model

import (
	"math"

	"github.com/gcomp/gcomp/frontend"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 4, 100)
	w := b.Param("w", frontend.T(frontend.F32, 100, 100), frontend.DefaultUniform(100))
	h := x.Matmul(w)
	s := b.Custom(frontend.Kernel{
		Name:    "swish",
		File:    "swish.cu",
		Scalars: []frontend.Scalar{frontend.IntArg(h.Type().Shape.NumElements())},
		Reference: func(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
			y := frontend.NewHostTensor(in[0].Type)
			for i, v := range in[0].F {
				y.F[i] = v / (1 + math.Exp(-v))
			}
			return y
		},
	}, h)
	b.Output("y", s.Tanh().Add(x))
}
