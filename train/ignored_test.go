package train

import (
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// A batch whose every label is ignored has PyTorch's mean 0/0: the step's loss is NaN, its
// gradients are zero (PyTorch's), so SGD with momentum and Adam leave the parameters as they
// were and their state finite; statically, and over a symbolic batch on the reference
// interpreter and on the memchecked simulator. A regression: 0·(1/0) made every gradient NaN.
func TestEveryLabelIgnoredStep(t *testing.T) {
	w := []float64{0.5, 1, 2, 1.5}
	for _, tc := range []struct {
		name string
		loss Loss
		opt  Optimizer
	}{
		{"cross-entropy, SGD with momentum", Loss{Name: CrossEntropyLoss, IgnoreIndex: ptr(int64(-100))}, &SGD{LR: 0.1, Momentum: 0.9}},
		{"cross-entropy, weights and label smoothing, Adam", Loss{Name: CrossEntropyLoss, Weight: w, IgnoreIndex: ptr(int64(-100)), LabelSmoothing: 0.2}, NewAdam()},
		{"NLL, weights, ignore_index a class, SGD", Loss{Name: NLLLoss, Weight: w, IgnoreIndex: ptr(int64(2))}, NewSGD(0.1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := func(b *frontend.Builder) {
				x := b.Input("x", ir.F32, b.Batch(4), 6)
				fc := frontend.Linear(x, b.Param("w", ir.T(ir.F32, 4, 6), frontend.Uniform(-1, 1)), b.Param("b", ir.T(ir.F32, 4), frontend.Uniform(-1, 1)))
				if tc.loss.Name == NLLLoss {
					fc = fc.LogSoftmax(1)
				}
				b.Output(LogitsName, fc)
			}
			for _, sym := range []bool{false, true} {
				var opts []frontend.Option
				if sym {
					opts = append(opts, frontend.WithMaxBatch(4))
				}
				fwd, err := frontend.Build("m", model, opts...)
				if err != nil {
					t.Fatal(err)
				}
				g, err := WithLoss(fwd, tc.loss, frontend.ReductionMean)
				if err != nil {
					t.Fatal(err)
				}
				s, err := StepFromGraph(g, tc.opt, Options{})
				if err != nil {
					t.Fatal(err)
				}
				st := s.Graph
				if sym {
					if st, err = ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: 3}); err != nil {
						t.Fatal(err)
					}
				}
				inputs, params := seededNonZero(t, st, 7)
				for name, v := range s.InitState() {
					inputs[name] = v
				}
				n := st.Lookup(LabelsName).Type.Shape[0]
				inputs[LabelsName] = tensor.FromFloats(ir.T(ir.I64, n), fill(n, float64(*tc.loss.IgnoreIndex)))
				check := func(what string, out map[string]*tensor.Tensor) {
					if l := out[DefaultLoss].F[0]; !math.IsNaN(l) {
						t.Errorf("%s: loss %v, want NaN (0/0)", what, l)
					}
					for _, p := range s.Params {
						got, was := out[NewPrefix+p], params[p]
						for i := range was.Len() {
							if got.At(i) != was.At(i) {
								t.Fatalf("%s: new %s[%d] = %v, was %v: the gradient is not zero", what, p, i, got.At(i), was.At(i))
							}
						}
					}
					for _, v := range s.State {
						for i, x := range out[NewPrefix+v.Name].F {
							if math.IsNaN(x) || math.IsInf(x, 0) {
								t.Fatalf("%s: new %s[%d] = %v", what, v.Name, i, x)
							}
						}
					}
				}
				want, err := ref.Run(st, inputs, params)
				if err != nil {
					t.Fatal(err)
				}
				what := map[bool]string{false: "static step", true: "symbolic step at batch 3"}[sym]
				check(what+" (reference)", want)
				if sym {
					p := loadSim(t, s.Graph)
					if err := p.SetParams(params); err != nil {
						t.Fatal(err)
					}
					got, err := p.Run(inputs)
					if err != nil {
						t.Fatal(err)
					}
					check(what+" (simulator)", got.Outputs)
				}
			}
		})
	}
}

// fill is n copies of v.
func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// Fit over rows whose every label is ignored trains nothing, on one device and on data-parallel
// ranks, over a static and a symbolic batch: every step's loss is NaN (0/0, PyTorch's) and its
// gradients are zero, so the parameters end as they began (no rank's NaN weight or 0/0 reaches
// them).
func TestFitEveryLabelIgnored(t *testing.T) {
	const rows, global = 20, 8 // a symbolic batch's last step has 4 rows
	x := make([]float64, rows*2)
	for i := range x {
		x[i] = float64(i%7)/3 - 1
	}
	d, err := data.NewTensors("d", tensor.FromFloats(ir.T(ir.F32, rows, 2), x), tensor.FromFloats(ir.T(ir.I64, rows), fill(rows, -1)))
	if err != nil {
		t.Fatal(err)
	}
	l := Loss{Name: CrossEntropyLoss, Weight: []float64{1, 2, 0.5}, IgnoreIndex: ptr(int64(-1))}
	for _, tc := range []struct {
		ranks    int
		symbolic bool
	}{{1, false}, {2, false}, {1, true}, {2, true}} {
		t.Run(fmt.Sprintf("%d ranks/symbolic %v", tc.ranks, tc.symbolic), func(t *testing.T) {
			var m *Model
			if tc.symbolic {
				m = symMixture(t, global/tc.ranks, l)
			} else {
				m = buildModel(t, mixtureAt(global/tc.ranks), l)
			}
			o := FitOptions{Optimizer: &SGD{LR: 0.1, Momentum: 0.9}, Train: d, Epochs: 1, Seed: 3}
			if tc.ranks > 1 {
				o.Parallel = &Parallel{Devices: refDevices(tc.ranks)}
			}
			res, err := Fit(m, o)
			if err != nil {
				t.Fatal(err)
			}
			if l := res.Epochs[0].Train.Loss; !math.IsNaN(l) {
				t.Errorf("train loss %v, want NaN", l)
			}
			init, err := InitParams(m.Train, 3)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range init {
				g := res.Params[name]
				for i := range w.Len() {
					if g.At(i) != w.At(i) {
						t.Fatalf("%s[%d] = %v, was %v", name, i, g.At(i), w.At(i))
					}
				}
			}
		})
	}
}
