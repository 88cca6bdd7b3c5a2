package autodiff

import (
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestGradCheckLayers checks the gradients of the front end's layer composites (activations,
// norms, convolutions built on conv2d, resampling, cumsum, topk) against central finite
// differences in f64. The activations see x·4, so their kinks and thresholds lie inside the
// sampled range (no sample sits on one).
func TestGradCheckLayers(t *testing.T) {
	p := func(b *frontend.Builder, name string, dims ...int) *frontend.Tensor {
		return b.Param(name, ir.T(ir.F64, dims...), frontend.Zeros())
	}
	x4 := func(b *frontend.Builder) *frontend.Tensor { return p(b, "x", 3, 7).MulScalar(4) }
	img := func(b *frontend.Builder, dims ...int) *frontend.Tensor { return p(b, "x", dims...) }
	tests := []struct {
		name  string
		build func(b *frontend.Builder) *frontend.Tensor
	}{
		{"clamp", func(b *frontend.Builder) *frontend.Tensor { return x4(b).Clamp(-1.5, 2) }},
		{"relu6_hardtanh", func(b *frontend.Builder) *frontend.Tensor {
			x := x4(b)
			return x.Relu6().Add(frontend.Hardtanh(x, -2, 1))
		}},
		{"hardswish_hardsigmoid", func(b *frontend.Builder) *frontend.Tensor {
			x := x4(b)
			return x.Hardswish().Add(x.Hardsigmoid())
		}},
		{"leaky_relu_elu", func(b *frontend.Builder) *frontend.Tensor {
			x := x4(b)
			return frontend.LeakyRelu(x, 0.1).Add(frontend.Elu(x, 0.7))
		}},
		{"softplus_mish", func(b *frontend.Builder) *frontend.Tensor {
			x := x4(b)
			return frontend.Softplus(x, 2, 3).Add(x.Mish())
		}},
		{"prelu", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Prelu(p(b, "x", 2, 3, 4).MulScalar(3), p(b, "w", 3))
		}},
		{"batch_norm", func(b *frontend.Builder) *frontend.Tensor {
			v := p(b, "var", 3)
			return frontend.BatchNorm(img(b, 2, 3, 2, 2), p(b, "mean", 3), v.Mul(v).AddScalar(0.5), p(b, "w", 3), p(b, "b", 3), 1e-5)
		}},
		{"group_norm", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.GroupNorm(img(b, 2, 4, 3), 2, p(b, "w", 4), p(b, "b", 4), 1e-5)
		}},
		{"instance_norm", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.InstanceNorm(img(b, 2, 2, 3, 2), p(b, "w", 2), nil, 1e-5)
		}},
		{"conv1d", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Conv1d(img(b, 1, 2, 7), p(b, "w", 3, 2, 3), p(b, "b", 3), frontend.Conv1dOptions{Stride: 2, Padding: 1})
		}},
		{"conv2d_same", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Conv2dSame(img(b, 1, 2, 4, 5), p(b, "w", 2, 2, 2, 3), nil, [2]int{1, 1}, 1)
		}},
		{"conv_transpose2d", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.ConvTranspose2d(img(b, 1, 2, 3, 2), p(b, "w", 2, 2, 3, 3), p(b, "b", 2),
				frontend.ConvTranspose2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 0}})
		}},
		{"conv_transpose2d_tiles", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.ConvTranspose2d(img(b, 1, 2, 2, 3), p(b, "w", 2, 3, 2, 2), p(b, "b", 3),
				frontend.ConvTranspose2dOptions{Stride: [2]int{2, 2}})
		}},
		{"adaptive_pools", func(b *frontend.Builder) *frontend.Tensor {
			x := img(b, 1, 2, 5, 4)
			return frontend.AdaptiveAvgPool2d(x, [2]int{3, 3}).Add(frontend.AdaptiveMaxPool2d(x, [2]int{3, 3}))
		}},
		{"global_avg_pool", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.AdaptiveAvgPool2d(img(b, 2, 2, 3, 3), [2]int{1, 1})
		}},
		{"bilinear_nearest", func(b *frontend.Builder) *frontend.Tensor {
			x := img(b, 1, 1, 3, 2)
			o := frontend.InterpolateOptions{Size: [2]int{5, 4}}
			near := frontend.Interpolate(x, o)
			o.Mode = "bilinear"
			return near.Add(frontend.Interpolate(x, o))
		}},
		{"flip_cumsum", func(b *frontend.Builder) *frontend.Tensor { return p(b, "x", 3, 5).Flip(1).Cumsum(1) }},
		{"topk", func(b *frontend.Builder) *frontend.Tensor {
			v, _ := p(b, "x", 3, 6).Topk(2, 1, true)
			return v
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkBuilt(t, tt.name, tt.build) })
	}
}

// checkBuilt checks the gradient of Σ out·w (w fixed random weights) with respect to every
// parameter of the graph build makes, at random parameter values in (-1, 1).
func checkBuilt(t *testing.T, name string, build func(b *frontend.Builder) *frontend.Tensor) {
	t.Helper()
	g, err := frontend.Build(name, func(b *frontend.Builder) {
		out := build(b)
		rng := rand.New(rand.NewPCG(3, 4))
		w := make([]float64, out.Type().Shape.NumElements())
		for i := range w {
			w[i] = rng.Float64()*2 - 1
		}
		b.Output("loss", out.Mul(b.Tensor(w, frontend.F64, out.Shape()...)).Sum())
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	params := map[string]*tensor.Tensor{}
	var names []string
	for _, v := range g.Params() {
		x := tensor.New(v.Type)
		for i := range x.F {
			x.F[i] = rng.Float64()*2 - 1
		}
		params[v.Name] = x
		names = append(names, v.Name)
	}
	checkGrad(t, g, nil, params, names, 1e-6, 1e-5)
}
