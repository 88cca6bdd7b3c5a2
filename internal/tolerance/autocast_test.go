package tolerance_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensor"
)

// linearNorm is a linear layer and a layer norm after it (a post-norm transformer's sublayer
// without the attention): under autocast the matmul runs in bf16 or f16 with f32
// accumulation, the norm in f32.
func linearNorm(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 8, 64)
	h := nn.NewLinear(b, "fc", 64, 64).Forward(x)
	b.Output("y", nn.NewLayerNorm(b, "norm", 64).Forward(h))
}

// A layer norm's variance after an f16 or bf16 contraction keeps a finite bound: the
// contraction's f32 accumulation costs K·u₃₂, not K·u of the low dtype (which took the
// variance's bound past var + eps, rsqrt to its singularity and every element of the norm's
// output to +∞, passing anything), and autocast's casts of exact values are exact. The bound is
// also small enough to catch a wrong result: below four units of the low dtype at 1, the
// scale of a normalized output.
func TestLayerNormAfterHalfContraction(t *testing.T) {
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		g, err := frontend.Build("linear_norm", linearNorm)
		if err != nil {
			t.Fatal(err)
		}
		g = passes.AutocastGraph(g, dt)
		for seed := range uint64(3) {
			in, params, err := tensor.SeededValues(g, seed)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tolerance.Bounds(g, in, params, false)
			if err != nil {
				t.Fatal(err)
			}
			y := out["y"]
			worst := 0.0
			for i := range y.Val.Len() {
				b := y.At(i)
				if math.IsInf(b, 0) || math.IsNaN(b) {
					t.Fatalf("%s seed %d: y[%d] = %g has bound %g", dt, seed, i, y.Val.At(i), b)
				}
				worst = max(worst, b)
			}
			// A unit of dt at 1, the scale of a normalized output.
			unit := map[ir.DType]float64{ir.BF16: 0x1p-7, ir.F16: 0x1p-10}[dt]
			t.Logf("%s seed %d: largest bound %g, %.3g units of %s at 1", dt, seed, worst, worst/unit, dt)
			if worst >= 4*unit {
				t.Errorf("%s seed %d: largest bound %g, not below four units of %s at 1", dt, seed, worst, dt)
			}
		}
	}
}

// The transformer example under autocast: its first layer norm's output has finite bounds now
// (before, rsqrt reached its singularity there too). The second's does not, and no worst-case
// rule per op makes it: `go test -run TransformerAutocast -v` prints, for each contraction and
// layer norm in order, the RMS of the bound over the RMS of the values, which grows by about
// √K per contraction (docs/perf.md, Autocast at inference).
func TestTransformerAutocastBounds(t *testing.T) {
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		g, err := frontend.Build("transformer", transformer.Model)
		if err != nil {
			t.Fatal(err)
		}
		g = passes.AutocastGraph(g, dt)
		in, params, err := tensor.SeededValues(g, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The contractions, and the norms' outputs: the adds of their shift β.
		var watch []*ir.Value
		afterRsqrt := 0
		for _, v := range g.Values {
			switch {
			case v.Op == "dot_general":
				watch = append(watch, v)
			case v.Op == "rsqrt":
				afterRsqrt = 3 // mul by rsqrt, mul by γ, add β
			case v.Op == "add" && afterRsqrt == 1 || v.Op == "mul" && afterRsqrt > 1:
				if afterRsqrt--; afterRsqrt == 0 {
					watch = append(watch, v)
				}
			}
		}
		g.Outputs = nil
		for i, v := range watch {
			g.Outputs = append(g.Outputs, ir.Output{Name: fmt.Sprintf("%d_%s", i, v.Op), Value: v})
		}
		out, err := tolerance.Bounds(g, in, params, false)
		if err != nil {
			t.Fatal(err)
		}
		norms := 0
		for _, o := range g.Outputs {
			b := out[o.Name]
			var se, sx float64
			inf := 0
			for i := range b.Val.Len() {
				if e := b.At(i); math.IsInf(e, 1) {
					inf++
				} else {
					se += e * e
				}
				sx += b.Val.At(i) * b.Val.At(i)
			}
			t.Logf("%s %-14s %s: RMS of the finite bounds / RMS value %.3g, %d of %d elements infinite", dt, o.Name, o.Value.Type, math.Sqrt(se/sx), inf, b.Val.Len())
			if o.Value.Op == "add" {
				if norms++; norms == 1 && inf > 0 {
					t.Errorf("%s: the first layer norm's output has %d elements with an infinite bound", dt, inf)
				}
			}
		}
		// 4 contractions (the projections, the MLP; the scores and their product with V are the
		// attention op, which autocast forms first) and the 2 norms.
		if norms != 2 || len(watch) != 6 {
			t.Errorf("%s: found %d layer norms and %d values in all, want 2 of 6", dt, norms, len(watch))
		}
	}
}
