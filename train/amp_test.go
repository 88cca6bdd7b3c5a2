package train

import (
	"math"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Every contraction of an AMP step (forward and backward) computes in the AMP dtype on operands
// cast to it, and its result is cast back to f32; no other value has the low-precision dtype.
func TestAutocastRunsContractionsLow(t *testing.T) {
	for _, amp := range []string{"bf16", "f16"} {
		t.Run(amp, func(t *testing.T) {
			s, err := Step("mlp", mlpModel, NewAdam(), Options{AMP: amp})
			if err != nil {
				t.Fatal(err)
			}
			dt, _ := ir.ParseDType(amp)
			users := map[*ir.Value][]*ir.Value{}
			for _, v := range s.Graph.Values {
				for _, a := range v.Args {
					users[a] = append(users[a], v)
				}
			}
			contractions := 0
			for _, v := range s.Graph.Values {
				switch {
				case v.Op == "dot_general" || v.Op == "conv2d":
					contractions++
					if v.Type.DType != dt {
						t.Errorf("%s computes %s, want %s", s.Graph.Format(v), v.Type, amp)
					}
					for _, a := range v.Args {
						if a.Op != "cast" || a.Args[0].Type.DType != ir.F32 {
							t.Errorf("%s: operand is not an f32 value cast to %s", s.Graph.Format(v), amp)
						}
					}
					for _, u := range users[v] {
						if u.Op != "cast" || u.Type.DType != ir.F32 {
							t.Errorf("%s: used by %s, want a cast to f32", s.Graph.Format(v), s.Graph.Format(u))
						}
					}
				case v.Type.DType == dt && v.Op != "cast":
					t.Errorf("%s is %s outside a contraction", s.Graph.Format(v), amp)
				}
			}
			if contractions != 5 { // 2 forward, 3 backward (no gradient for the input x)
				t.Errorf("%d contractions, want 5", contractions)
			}
		})
	}
}

// AMP training follows f32 training closely on the MLP.
func TestAMPTrainsLikeF32(t *testing.T) {
	const steps = 8
	f32, err := Step("mlp", mlpModel, &SGD{LR: 0.01, Momentum: 0.9}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := RunRef(f32, mlpParams(), steps, mlpBatch)
	if err != nil {
		t.Fatal(err)
	}
	for _, amp := range []string{"bf16", "f16"} {
		t.Run(amp, func(t *testing.T) {
			s, err := Step("mlp", mlpModel, &SGD{LR: 0.01, Momentum: 0.9}, Options{AMP: amp})
			if err != nil {
				t.Fatal(err)
			}
			r, err := RunRef(s, mlpParams(), steps, mlpBatch)
			if err != nil {
				t.Fatal(err)
			}
			for i := range steps {
				if d := math.Abs(r.Losses[i]-ref.Losses[i]) / ref.Losses[i]; d > 1e-2 || d == 0 {
					t.Errorf("step %d: loss %.6g, f32 %.6g", i, r.Losses[i], ref.Losses[i])
				}
			}
			if amp == "f16" && slices.Contains(r.Skipped, true) {
				t.Errorf("f16 skipped steps %v on a well-scaled model", r.Skipped)
			}
		})
	}
}

// A model whose scaled gradient overflows f16 at 65536 but not at 32768: GradScaler's schedule
// skips the step and halves the scale, grows it again after GrowthInterval clean steps, and a
// skipped step leaves the parameters and the optimizer state (step count included) unchanged.
func TestDynamicLossScaling(t *testing.T) {
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 1, 2)
		w := b.Param("w", ir.T(ir.F32, 1, 2), frontend.Zeros())
		b.Output("loss", x.Matmul(w.T()).Sum()) // d loss/d y = 1: the scaled gradient is the scale
	}
	ls := DefaultLossScale()
	ls.GrowthInterval = 2
	s, err := Step("overflow", model, NewAdam(), Options{AMP: "f16", LossScale: ls})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewRefTrainer(s, map[string]*tensor.Tensor{"w": tensor.FromFloats(ir.T(ir.F32, 1, 2), []float64{0.5, -0.25})})
	// The weight gradient x·scale is computed in f16 (max 65504): 65536 overflows, 32768 does not.
	batch := map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(ir.F32, 1, 2), []float64{0.5, 1})}
	wantSkip := []bool{true, false, false, true, false, false, true}
	wantScale := []float64{32768, 32768, 65536, 32768, 32768, 65536, 32768}
	wantTracker := []int64{0, 1, 0, 0, 1, 0, 0}
	steps := 0.0
	for i := range wantSkip {
		before := tr.Params["w"].Clone()
		out, err := tr.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		skipped := out[FoundInfName].F[0] == 1
		if skipped != wantSkip[i] {
			t.Errorf("step %d: skipped %v, want %v", i, skipped, wantSkip[i])
		}
		if !skipped {
			steps++
		}
		if got := tr.State[ScaleName].F[0]; got != wantScale[i] {
			t.Errorf("step %d: scale %v, want %v", i, got, wantScale[i])
		}
		if got := tr.State[TrackerName].I[0]; got != wantTracker[i] {
			t.Errorf("step %d: growth tracker %v, want %v", i, got, wantTracker[i])
		}
		if got := tr.State[StepName].F[0]; got != steps {
			t.Errorf("step %d: optimizer step count %v, want %v", i, got, steps)
		}
		if changed := !slices.Equal(before.F, tr.Params["w"].F); changed == skipped {
			t.Errorf("step %d: skipped %v but parameters changed %v", i, skipped, changed)
		}
		if l := out["loss"].F[0]; math.IsNaN(l) || math.IsInf(l, 0) {
			t.Errorf("step %d: loss %v", i, l) // only the scaled gradient overflows
		}
	}
}
