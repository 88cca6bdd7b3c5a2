package frontend_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// run builds model and runs it on the reference interpreter. Inputs named in given take those
// values; the other inputs are seeded random data and parameters their seeded initial values.
// It returns every input, parameter and output by name.
func run(t *testing.T, model func(b *frontend.Builder), given map[string][]float64) map[string][]float64 {
	t.Helper()
	g, err := frontend.Build("m", model)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string][]float64{}
	inputs, params := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range g.Values {
		var x *tensor.Tensor
		switch {
		case v.Op == ir.OpInput && given[v.Name] != nil:
			x = tensor.FromFloats(v.Type, given[v.Name])
			inputs[v.Name] = x
		case v.Op == ir.OpInput:
			x = tensor.RandomInput(v, 1)
			inputs[v.Name] = x
		case v.Op == ir.OpParam:
			if x, err = tensor.Initialize(v, 1); err != nil {
				t.Fatal(err)
			}
			params[v.Name] = x
		default:
			continue
		}
		vals[v.Name] = floats(x)
	}
	out, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range out {
		vals[name] = floats(x)
	}
	return vals
}

func floats(x *tensor.Tensor) []float64 {
	f := make([]float64, x.Len())
	for i := range f {
		f[i] = x.At(i)
	}
	return f
}

// near fails unless got and want agree within tol, absolutely or relatively.
func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol || d <= tol*math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v (and maybe more)", what, i, got[i], want[i])
		}
	}
}

// linearRef is x·wᵀ + b for x[n, in], w[out, in], b[out] (b may be nil).
func linearRef(x, w, b []float64, in, out int) []float64 {
	n := len(x) / in
	y := make([]float64, n*out)
	for i := range n {
		for o := range out {
			s := 0.0
			if b != nil {
				s = b[o]
			}
			for k := range in {
				s += x[i*in+k] * w[o*in+k]
			}
			y[i*out+o] = s
		}
	}
	return y
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

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
	near(t, "matvec", v["mv"], linearRef(v["m"], v["v"], nil, 4, 1), 1e-12)
}

func TestLayerNormValues(t *testing.T) {
	v := run(t, func(b *frontend.Builder) {
		x := b.Input("x", frontend.F64, 3, 5)
		w, bias := b.Input("w", frontend.F64, 5), b.Input("b", frontend.F64, 5)
		b.Output("y", frontend.LayerNorm(x, []int{5}, w, bias, 1e-5))
	}, nil)
	x, w, bias := v["x"], v["w"], v["b"]
	var want []float64
	for r := range 3 {
		row := x[r*5 : r*5+5]
		mean, vr := 0.0, 0.0
		for _, e := range row {
			mean += e / 5
		}
		for _, e := range row {
			vr += (e - mean) * (e - mean) / 5
		}
		for i, e := range row {
			want = append(want, (e-mean)/math.Sqrt(vr+1e-5)*w[i]+bias[i])
		}
	}
	near(t, "layer_norm", v["y"], want, 1e-12)
}

// attentionRef is softmax(q·kᵀ/√e)·v for one head: q[l, e], k[s, e], v[s, ev].
func attentionRef(q, k, vv []float64, l, s, e, ev int, causal bool) []float64 {
	out := make([]float64, l*ev)
	for i := range l {
		scores := make([]float64, s)
		m := math.Inf(-1)
		for j := range s {
			scores[j] = math.Inf(-1)
			if !causal || j <= i {
				d := 0.0
				for c := range e {
					d += q[i*e+c] * k[j*e+c]
				}
				scores[j] = d / math.Sqrt(float64(e))
			}
			m = max(m, scores[j])
		}
		sum := 0.0
		for j := range s {
			scores[j] = math.Exp(scores[j] - m)
			sum += scores[j]
		}
		for j := range s {
			for c := range ev {
				out[i*ev+c] += scores[j] / sum * vv[j*ev+c]
			}
		}
	}
	return out
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
			want = append(want, attentionRef(v["q"][h*12:h*12+12], v["k"][h*12:h*12+12], v["v"][h*20:h*20+20], 4, 4, 3, 5, causal)...)
		}
		near(t, "attention", v["y"], want, 1e-12)
	}
}

// lstmStepRef is PyTorch's LSTM cell for one batch row, gates i, f, g, o.
func lstmStepRef(x, h, c, wih, whh, bih, bhh []float64, in, hs int) (h2, c2 []float64) {
	g := linearRef(x, wih, bih, in, 4*hs)
	gh := linearRef(h, whh, bhh, hs, 4*hs)
	h2, c2 = make([]float64, hs), make([]float64, hs)
	for j := range hs {
		i := sigmoid(g[j] + gh[j])
		f := sigmoid(g[hs+j] + gh[hs+j])
		gg := math.Tanh(g[2*hs+j] + gh[2*hs+j])
		o := sigmoid(g[3*hs+j] + gh[3*hs+j])
		c2[j] = f*c[j] + i*gg
		h2[j] = o * math.Tanh(c2[j])
	}
	return h2, c2
}

// gruStepRef is PyTorch's GRU cell for one batch row, gates r, z, n.
func gruStepRef(x, h, wih, whh, bih, bhh []float64, in, hs int) []float64 {
	gi := linearRef(x, wih, bih, in, 3*hs)
	gh := linearRef(h, whh, bhh, hs, 3*hs)
	h2 := make([]float64, hs)
	for j := range hs {
		r := sigmoid(gi[j] + gh[j])
		z := sigmoid(gi[hs+j] + gh[hs+j])
		n := math.Tanh(gi[2*hs+j] + r*gh[2*hs+j])
		h2[j] = (1-z)*n + z*h[j]
	}
	return h2
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
	h, c := lstmStepRef(v["x"], v["h"], v["c"], v["lwih"], v["lwhh"], v["lbih"], v["lbhh"], in, hs)
	near(t, "lstm h", v["lstm_h"], h, 1e-12)
	near(t, "lstm c", v["lstm_c"], c, 1e-12)
	near(t, "gru h", v["gru_h"], gruStepRef(v["x"], v["h"], v["gwih"], v["gwhh"], v["gbih"], v["gbhh"], in, hs), 1e-12)
	rnn := linearRef(v["x"], v["gwih"][:hs*in], nil, in, hs)
	hh := linearRef(v["h"], v["gwhh"][:hs*hs], nil, hs, hs)
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
