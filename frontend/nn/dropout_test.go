package nn_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Dropout's masks are the same bits on the reference interpreter and on the simulator (the
// compiled PTX), for several keys and streams, and the keep rate over 2^20 draws lies within
// 4σ of 1−p; kept elements are scaled by exactly fl(1/(1−p)).
func TestDropoutMasks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the simulator draws 2^21 numbers per key")
	}
	const rows, cols, p = 1024, 1024, 0.3
	g, err := frontend.Build("dropout", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, rows, cols)
		key := b.Input("key", ir.I64)
		b.Output("a", frontend.DropoutTrain(x, p, key, 0))
		b.Output("b", frontend.DropoutTrain(x, p, key, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog := simProgram(t, res.Artifact, nil)
	x := tensor.New(ir.T(ir.F32, rows, cols))
	for i := range x.F {
		x.F[i] = 1
	}
	scale := float64(float32(1 / (1 - p)))
	for _, k := range []int64{-7, math.MaxInt64} {
		key := tensor.New(ir.T(ir.I64))
		key.I[0] = k
		in := map[string]*tensor.Tensor{"x": x, "key": key}
		want, err := ref.Run(g, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := prog.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		same := 0
		for _, out := range []string{"a", "b"} {
			kept := 0
			for i, w := range want[out].F {
				if got.Outputs[out].F[i] != w {
					t.Fatalf("key %d %s[%d]: simulator %v, reference %v", k, out, i, got.Outputs[out].F[i], w)
				}
				if w != 0 && w != scale {
					t.Fatalf("key %d %s[%d] = %v, want 0 or %v", k, out, i, w, scale)
				}
				if w != 0 {
					kept++
				}
				if out == "b" && (w != 0) == (want["a"].F[i] != 0) {
					same++
				}
			}
			n := float64(rows * cols)
			if d := math.Abs(float64(kept)/n - (1 - p)); d > 4*math.Sqrt(p*(1-p)/n) {
				t.Errorf("key %d %s: keep rate %v, want %v within 4σ", k, out, float64(kept)/n, 1-p)
			}
		}
		// Two streams are independent: they agree where both keep or both drop, p²+(1−p)².
		n, q := float64(rows*cols), p*p+(1-p)*(1-p)
		if d := math.Abs(float64(same)/n - q); d > 4*math.Sqrt(q*(1-q)/n) {
			t.Errorf("key %d: streams 0 and 1 agree on %v of the elements, want %v within 4σ", k, float64(same)/n, q)
		}
	}
}
