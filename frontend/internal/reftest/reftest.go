// Package reftest runs DSL models on the reference interpreter for the frontend's tests.
package reftest

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Run builds model and runs it on the reference interpreter. Inputs named in given take those
// values; the other inputs are seeded random data and parameters their seeded initial values.
// It returns every input, parameter and output by name, as float64s.
func Run(t testing.TB, model func(b *frontend.Builder), given map[string][]float64) map[string][]float64 {
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
		vals[v.Name] = Floats(x)
	}
	out, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range out {
		vals[name] = Floats(x)
	}
	return vals
}

// Floats returns x's elements as float64s.
func Floats(x *tensor.Tensor) []float64 {
	f := make([]float64, x.Len())
	for i := range f {
		f[i] = x.At(i)
	}
	return f
}

// Near fails unless got and want agree within tol, absolutely or relatively.
func Near(t testing.TB, what string, got, want []float64, tol float64) {
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

// Linear is x·wᵀ + b for x[n, in], w[out, in], b[out] (b may be nil), in plain loops.
func Linear(x, w, b []float64, in, out int) []float64 {
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

// Sigmoid is 1/(1+e⁻ˣ).
func Sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Attention is softmax(q·kᵀ/√e)·v for one head: q[l, e], k[s, e], v[s, ev]; with causal, query
// i sees keys j ≤ i.
func Attention(q, k, v []float64, l, s, e, ev int, causal bool) []float64 {
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
				out[i*ev+c] += scores[j] / sum * v[j*ev+c]
			}
		}
	}
	return out
}

// LSTMStep is PyTorch's LSTM cell for one batch row, gates i, f, g, o.
func LSTMStep(x, h, c, wih, whh, bih, bhh []float64, in, hs int) (h2, c2 []float64) {
	g := Linear(x, wih, bih, in, 4*hs)
	gh := Linear(h, whh, bhh, hs, 4*hs)
	h2, c2 = make([]float64, hs), make([]float64, hs)
	for j := range hs {
		i := Sigmoid(g[j] + gh[j])
		f := Sigmoid(g[hs+j] + gh[hs+j])
		gg := math.Tanh(g[2*hs+j] + gh[2*hs+j])
		o := Sigmoid(g[3*hs+j] + gh[3*hs+j])
		c2[j] = f*c[j] + i*gg
		h2[j] = o * math.Tanh(c2[j])
	}
	return h2, c2
}

// GRUStep is PyTorch's GRU cell for one batch row, gates r, z, n.
func GRUStep(x, h, wih, whh, bih, bhh []float64, in, hs int) []float64 {
	gi := Linear(x, wih, bih, in, 3*hs)
	gh := Linear(h, whh, bhh, hs, 3*hs)
	h2 := make([]float64, hs)
	for j := range hs {
		r := Sigmoid(gi[j] + gh[j])
		z := Sigmoid(gi[hs+j] + gh[hs+j])
		n := math.Tanh(gi[2*hs+j] + r*gh[2*hs+j])
		h2[j] = (1-z)*n + z*h[j]
	}
	return h2
}

// LayerNorm normalizes each row of x[n, d] with the biased variance, then scales and shifts.
func LayerNorm(x, w, b []float64, d int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += d {
		mean, vr := 0.0, 0.0
		for _, e := range x[r : r+d] {
			mean += e / float64(d)
		}
		for _, e := range x[r : r+d] {
			vr += (e - mean) * (e - mean) / float64(d)
		}
		for i, e := range x[r : r+d] {
			y[r+i] = (e-mean)/math.Sqrt(vr+eps)*w[i] + b[i]
		}
	}
	return y
}

// LineOf returns "file.go:LINE" of a function literal's first line. A test case written on one
// line thus knows the position its errors must carry.
func LineOf(f any) string {
	fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
	file, line := fn.FileLine(fn.Entry())
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}
