package nn_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/frontend/nn"
)

// The modules compute PyTorch's equations: each is checked against a plain-loop implementation
// of the documented formulas, with the parameters' seeded initial values.

const tol = 2e-5 // f32 parameters and activations

// row returns row i of a row-major matrix with n columns.
func row(x []float64, i, n int) []float64 { return x[i*n : (i+1)*n] }

func TestLSTMValues(t *testing.T) {
	const bsz, steps, in, hs, layers = 2, 3, 4, 5, 2
	v := reftest.Run(t, func(b *frontend.Builder) {
		x := b.Input("x", f32, bsz, steps, in)
		h0, c0 := b.Input("h0", f32, layers, bsz, hs), b.Input("c0", f32, layers, bsz, hs)
		out, hn, cn := nn.NewLSTM(b, "lstm", in, hs, nn.RNNOptions{NumLayers: layers, BatchFirst: true}).Forward(x, h0, c0)
		b.Output("out", out)
		b.Output("h_n", hn)
		b.Output("c_n", cn)
	}, nil)
	seq := v["x"] // [B, T, F], F = in for layer 0, hs after
	width := in
	var hn, cn []float64
	for l := range layers {
		p := func(name string) []float64 { return v["lstm."+name+"_l"+strconv.Itoa(l)] }
		next := make([]float64, bsz*steps*hs)
		for bi := range bsz {
			h, c := row(v["h0"], l*bsz+bi, hs), row(v["c0"], l*bsz+bi, hs)
			for ti := range steps {
				h, c = reftest.LSTMStep(row(seq, bi*steps+ti, width), h, c, p("weight_ih"), p("weight_hh"), p("bias_ih"), p("bias_hh"), width, hs)
				copy(row(next, bi*steps+ti, hs), h)
			}
			hn, cn = append(hn, h...), append(cn, c...)
		}
		seq, width = next, hs
	}
	reftest.Near(t, "out", v["out"], seq, tol)
	reftest.Near(t, "h_n", v["h_n"], hn, tol)
	reftest.Near(t, "c_n", v["c_n"], cn, tol)
}

// GRU and RNN in PyTorch's default time-major layout [T, B, F], from zero initial states.
func TestGRUAndRNNValues(t *testing.T) {
	const steps, bsz, in, hs = 4, 2, 3, 5
	v := reftest.Run(t, func(b *frontend.Builder) {
		x := b.Input("x", f32, steps, bsz, in)
		out, hn := nn.NewGRU(b, "gru", in, hs).Forward(x, nil)
		b.Output("gru_out", out)
		b.Output("gru_hn", hn)
		rout, _ := nn.NewRNN(b, "rnn", in, hs, nn.RNNOptions{Nonlinearity: "relu"}).Forward(x, nil)
		b.Output("rnn_out", rout)
	}, nil)
	var gruOut, rnnOut, gruHn []float64
	for bi := range bsz {
		h, hr := make([]float64, hs), make([]float64, hs)
		for ti := range steps {
			x := row(v["x"], ti*bsz+bi, in)
			h = reftest.GRUStep(x, h, v["gru.weight_ih_l0"], v["gru.weight_hh_l0"], v["gru.bias_ih_l0"], v["gru.bias_hh_l0"], in, hs)
			a := reftest.Linear(x, v["rnn.weight_ih_l0"], v["rnn.bias_ih_l0"], in, hs)
			r := reftest.Linear(hr, v["rnn.weight_hh_l0"], v["rnn.bias_hh_l0"], hs, hs)
			hr = make([]float64, hs)
			for j := range hs {
				hr[j] = max(a[j]+r[j], 0)
			}
			gruOut = place(gruOut, (ti*bsz+bi)*hs, h)
			rnnOut = place(rnnOut, (ti*bsz+bi)*hs, hr)
		}
		gruHn = append(gruHn, h...)
	}
	reftest.Near(t, "gru out", v["gru_out"], gruOut, tol)
	reftest.Near(t, "gru h_n", v["gru_hn"], gruHn, tol)
	reftest.Near(t, "rnn out", v["rnn_out"], rnnOut, tol)
}

// place writes vals at offset in s, growing s as needed.
func place(s []float64, off int, vals []float64) []float64 {
	for len(s) < off+len(vals) {
		s = append(s, 0)
	}
	copy(s[off:], vals)
	return s
}

// mhaRef is batch-first self-attention over x[B, L, E] with PyTorch's packed projections.
func mhaRef(v map[string][]float64, prefix string, x []float64, bsz, l, e, heads int, causal bool) []float64 {
	d := e / heads
	qkv := reftest.Linear(x, v[prefix+"in_proj_weight"], v[prefix+"in_proj_bias"], e, 3*e)
	o := make([]float64, bsz*l*e)
	for bi := range bsz {
		for h := range heads {
			part := func(which int) []float64 { // [L, D] of q, k or v for this batch row and head
				var p []float64
				for i := range l {
					off := (bi*l+i)*3*e + which*e + h*d
					p = append(p, qkv[off:off+d]...)
				}
				return p
			}
			a := reftest.Attention(part(0), part(1), part(2), l, l, d, d, causal)
			for i := range l {
				copy(o[(bi*l+i)*e+h*d:], a[i*d:(i+1)*d])
			}
		}
	}
	return reftest.Linear(o, v[prefix+"out_proj.weight"], v[prefix+"out_proj.bias"], e, e)
}

func TestMultiheadAttentionValues(t *testing.T) {
	const bsz, l, e, heads = 2, 4, 8, 2
	for _, causal := range []bool{false, true} {
		v := reftest.Run(t, func(b *frontend.Builder) {
			x := b.Input("x", f32, bsz, l, e)
			m := nn.NewMultiheadAttention(b, "attn", e, heads, nn.MultiheadAttentionOptions{BatchFirst: true})
			m.InProjBias.SetInit(frontend.Normal(0, 1)) // not zeros, so that the bias is tested
			m.OutProj.Bias.SetInit(frontend.Normal(0, 1))
			b.Output("y", m.Forward(x, x, x, causal))
			// The same attention with separate query, key and value tensors takes the unpacked path.
			b.Output("y2", m.Forward(x.MulScalar(1), x.AddScalar(0), x, causal))
		}, nil)
		want := mhaRef(v, "attn.", v["x"], bsz, l, e, heads, causal)
		reftest.Near(t, "attention", v["y"], want, tol)
		reftest.Near(t, "attention unpacked", v["y2"], want, tol)
	}
}

func TestTransformerEncoderLayerValues(t *testing.T) {
	const bsz, l, e, heads, ff = 2, 5, 8, 2, 16
	for _, normFirst := range []bool{false, true} {
		v := reftest.Run(t, func(b *frontend.Builder) {
			x := b.Input("src", f32, bsz, l, e)
			m := nn.NewTransformerEncoderLayer(b, "", e, heads, tel{DimFeedforward: ff, Activation: "gelu", BatchFirst: true, NormFirst: normFirst})
			for _, p := range []*frontend.Tensor{m.Norm1.Weight, m.Norm1.Bias, m.Norm2.Weight, m.Norm2.Bias, m.SelfAttn.InProjBias} {
				p.SetInit(frontend.Normal(0, 1))
			}
			b.Output("y", m.Forward(x))
		}, nil)
		ln := func(x []float64, n string) []float64 {
			return reftest.LayerNorm(x, v[n+".weight"], v[n+".bias"], e, 1e-5)
		}
		add := func(a, b []float64) []float64 {
			s := make([]float64, len(a))
			for i := range a {
				s[i] = a[i] + b[i]
			}
			return s
		}
		sa := func(x []float64) []float64 { return mhaRef(v, "self_attn.", x, bsz, l, e, heads, false) }
		ffn := func(x []float64) []float64 {
			h := reftest.Linear(x, v["linear1.weight"], v["linear1.bias"], e, ff)
			for i, z := range h {
				h[i] = 0.5 * z * (1 + math.Erf(z/math.Sqrt2))
			}
			return reftest.Linear(h, v["linear2.weight"], v["linear2.bias"], ff, e)
		}
		x := v["src"]
		if normFirst {
			x = add(x, sa(ln(x, "norm1")))
			x = add(x, ffn(ln(x, "norm2")))
		} else {
			x = ln(add(x, sa(x)), "norm1")
			x = ln(add(x, ffn(x)), "norm2")
		}
		reftest.Near(t, "encoder layer", v["y"], x, 1e-4)
	}
}
