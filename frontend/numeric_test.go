package frontend_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
)

var (
	run     = reftest.Run
	near    = reftest.Near
	sigmoid = reftest.Sigmoid
)

func TestSoftmaxValues(t *testing.T) {
	x := []float64{1, 2, 3, 4, 1000, 1001, 1002, 1003, -1e4, 0, 0, 1e-3}
	v := run(t, func(b *frontend.Builder) {
		in := b.Input("x", frontend.F64, 3, 4)
		b.Output("sm", in.Softmax(1))
		b.Output("lsm", in.LogSoftmax(-1))
		b.Output("sm0", in.Softmax(0))
	}, map[string][]float64{"x": x})
	var sm, lsm, sm0 []float64
	for r := range 3 {
		row := x[r*4 : r*4+4]
		m := math.Inf(-1)
		for _, e := range row {
			m = max(m, e)
		}
		s := 0.0
		for _, e := range row {
			s += math.Exp(e - m)
		}
		for _, e := range row {
			sm = append(sm, math.Exp(e-m)/s)
			lsm = append(lsm, e-m-math.Log(s))
		}
	}
	for i := range x {
		c := i % 4
		m := max(x[c], x[4+c], x[8+c])
		s := math.Exp(x[c]-m) + math.Exp(x[4+c]-m) + math.Exp(x[8+c]-m)
		sm0 = append(sm0, math.Exp(x[i]-m)/s)
	}
	near(t, "softmax", v["sm"], sm, 1e-12)
	near(t, "log_softmax", v["lsm"], lsm, 1e-12)
	near(t, "softmax dim 0", v["sm0"], sm0, 1e-12)
}

func TestActivationValues(t *testing.T) {
	x := []float64{-3, -1, -0.5, 0, 0.5, 1, 3, 10}
	v := run(t, func(b *frontend.Builder) {
		in := b.Input("x", frontend.F64, 8)
		b.Output("gelu", in.Gelu())
		b.Output("gelu_tanh", in.GeluTanh())
		b.Output("silu", in.Silu())
	}, map[string][]float64{"x": x})
	var gelu, geluTanh, silu []float64
	for _, e := range x {
		gelu = append(gelu, 0.5*e*(1+math.Erf(e/math.Sqrt2)))
		geluTanh = append(geluTanh, 0.5*e*(1+math.Tanh(math.Sqrt(2/math.Pi)*(e+0.044715*e*e*e))))
		silu = append(silu, e*sigmoid(e))
	}
	near(t, "gelu", v["gelu"], gelu, 1e-12)
	near(t, "gelu tanh", v["gelu_tanh"], geluTanh, 1e-12)
	near(t, "silu", v["silu"], silu, 1e-12)
}

// Batched matmul with broadcast batch dims, against a loop.
func TestMatmulValues(t *testing.T) {
	v := run(t, func(b *frontend.Builder) {
		a := b.Input("a", frontend.F64, 2, 1, 3, 4)
		c := b.Input("c", frontend.F64, 5, 4, 2)
		b.Output("y", a.Matmul(c)) // [2, 5, 3, 2]
		b.Output("mv", b.Input("m", frontend.F64, 3, 4).Matmul(b.Input("v", frontend.F64, 4)))
	}, nil)
	a, c := v["a"], v["c"]
	var want []float64
	for i := range 2 {
		for j := range 5 {
			for r := range 3 {
				for col := range 2 {
					s := 0.0
					for k := range 4 {
						s += a[i*12+r*4+k] * c[j*8+k*2+col]
					}
					want = append(want, s)
				}
			}
		}
	}
	near(t, "matmul", v["y"], want, 1e-12)
	near(t, "matvec", v["mv"], reftest.Linear(v["m"], v["v"], nil, 4, 1), 1e-12)
}

func TestLayerNormValues(t *testing.T) {
	v := run(t, func(b *frontend.Builder) {
		x := b.Input("x", frontend.F64, 3, 5)
		w, bias := b.Input("w", frontend.F64, 5), b.Input("b", frontend.F64, 5)
		b.Output("y", frontend.LayerNorm(x, []int{5}, w, bias, 1e-5))
	}, nil)
	near(t, "layer_norm", v["y"], reftest.LayerNorm(v["x"], v["w"], v["b"], 5, 1e-5), 1e-12)
}

func TestAttentionValues(t *testing.T) {
	for _, causal := range []bool{false, true} {
		v := run(t, func(b *frontend.Builder) {
			q := b.Input("q", frontend.F64, 2, 4, 3)
			k := b.Input("k", frontend.F64, 2, 4, 3)
			vv := b.Input("v", frontend.F64, 2, 4, 5)
			b.Output("y", frontend.ScaledDotProductAttention(q, k, vv, causal))
		}, nil)
		var want []float64
		for h := range 2 {
			want = append(want, reftest.Attention(v["q"][h*12:h*12+12], v["k"][h*12:h*12+12], v["v"][h*20:h*20+20], 4, 4, 3, 5, causal)...)
		}
		near(t, "attention", v["y"], want, 1e-12)
	}
}

func TestCellValues(t *testing.T) {
	const in, hs = 3, 4
	v := run(t, func(b *frontend.Builder) {
		x, h, c := b.Input("x", frontend.F64, 1, in), b.Input("h", frontend.F64, 1, hs), b.Input("c", frontend.F64, 1, hs)
		lw := []*frontend.Tensor{b.Input("lwih", frontend.F64, 4*hs, in), b.Input("lwhh", frontend.F64, 4*hs, hs),
			b.Input("lbih", frontend.F64, 4*hs), b.Input("lbhh", frontend.F64, 4*hs)}
		gw := []*frontend.Tensor{b.Input("gwih", frontend.F64, 3*hs, in), b.Input("gwhh", frontend.F64, 3*hs, hs),
			b.Input("gbih", frontend.F64, 3*hs), b.Input("gbhh", frontend.F64, 3*hs)}
		h2, c2 := frontend.LSTMCell(x, h, c, lw[0], lw[1], lw[2], lw[3])
		b.Output("lstm_h", h2)
		b.Output("lstm_c", c2)
		b.Output("gru_h", frontend.GRUCell(x, h, gw[0], gw[1], gw[2], gw[3]))
		b.Output("rnn_h", frontend.RNNCell(x, h, gw[0].Narrow(0, 0, hs), gw[1].Narrow(0, 0, hs), nil, nil, false))
	}, nil)
	h, c := reftest.LSTMStep(v["x"], v["h"], v["c"], v["lwih"], v["lwhh"], v["lbih"], v["lbhh"], in, hs)
	near(t, "lstm h", v["lstm_h"], h, 1e-12)
	near(t, "lstm c", v["lstm_c"], c, 1e-12)
	near(t, "gru h", v["gru_h"], reftest.GRUStep(v["x"], v["h"], v["gwih"], v["gwhh"], v["gbih"], v["gbhh"], in, hs), 1e-12)
	rnn := reftest.Linear(v["x"], v["gwih"][:hs*in], nil, in, hs)
	hh := reftest.Linear(v["h"], v["gwhh"][:hs*hs], nil, hs, hs)
	for i := range rnn {
		rnn[i] = math.Tanh(rnn[i] + hh[i])
	}
	near(t, "rnn h", v["rnn_h"], rnn, 1e-12)
}

func TestLossValues(t *testing.T) {
	v := run(t, func(b *frontend.Builder) {
		p, q := b.Input("p", frontend.F64, 3, 4), b.Input("q", frontend.F64, 3, 4)
		b.Output("mse", frontend.MSELoss(p, q))
		labels := b.Input("labels", frontend.I64, 3)
		b.Output("ce", frontend.CrossEntropyLoss(p, labels))
	}, map[string][]float64{"labels": {2, 0, 3}})
	p, q := v["p"], v["q"]
	mse := 0.0
	for i := range p {
		mse += (p[i] - q[i]) * (p[i] - q[i]) / 12
	}
	ce := 0.0
	for r, label := range []int{2, 0, 3} {
		s := 0.0
		for c := range 4 {
			s += math.Exp(p[r*4+c])
		}
		ce += (math.Log(s) - p[r*4+label]) / 3
	}
	near(t, "mse", v["mse"], []float64{mse}, 1e-12)
	near(t, "cross entropy", v["ce"], []float64{ce}, 1e-12)
}

// The movement helpers pick the elements PyTorch's indexing would.
func TestMovementValues(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} // [3, 4]
	v := run(t, func(b *frontend.Builder) {
		in := b.Input("x", frontend.F64, 3, 4)
		b.Output("slice", in.Slice(1, -3, -1)) // x[:, 1:3]
		b.Output("index", in.Index(0, -1))     // x[-1]
		b.Output("chunk", in.Chunk(3, 1)[1])   // x[:, 2:4]
		b.Output("t", in.T())                  // x.T
		b.Output("cat", frontend.Cat(0, in, in).Slice(0, 2, 4))
		b.Output("stack", frontend.Stack(2, in, in.Neg()).Index(1, 0))
		b.Output("pad", in.Narrow(0, 0, 1).Pad([]int{0, 1}, []int{0, 1}, -1))
		b.Output("where", in.MaskedFill(in.LtScalar(6), -7).Index(1, 1))
		b.Output("mean", in.Mean(0))
		b.Output("max", in.Max(1))
	}, map[string][]float64{"x": x})
	for _, tc := range []struct {
		name string
		want []float64
	}{
		{"slice", []float64{1, 2, 5, 6, 9, 10}},
		{"index", []float64{8, 9, 10, 11}},
		{"chunk", []float64{2, 3, 6, 7, 10, 11}},
		{"t", []float64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
		{"cat", []float64{8, 9, 10, 11, 0, 1, 2, 3}},
		{"stack", []float64{0, 0, 4, -4, 8, -8}},
		{"pad", []float64{-1, 0, 1, 2, 3, -1}},
		{"where", []float64{-7, -7, 9}},
		{"mean", []float64{4, 5, 6, 7}},
		{"max", []float64{3, 7, 11}},
	} {
		near(t, tc.name, v[tc.name], tc.want, 0)
	}
}
