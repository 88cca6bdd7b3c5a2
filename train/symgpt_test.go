package train

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// gptRows is n rows for the gpt example with MSELoss: tokens [n, 64] and targets [n, 64, 512].
func gptRows(t *testing.T, n int) data.Dataset {
	t.Helper()
	tok := make([]float64, n*gpt.SeqLen)
	for i := range tok {
		tok[i] = float64((7*i + i/gpt.SeqLen) % gpt.VocabSize)
	}
	y := make([]float64, n*gpt.SeqLen*gpt.VocabSize)
	for i := range y {
		y[i] = float64(i%13)/13 - 0.5
	}
	d, err := data.NewTensors("gpt", tensor.FromFloats(ir.T(ir.I64, n, gpt.SeqLen), tok), tensor.FromFloats(ir.T(ir.F32, n, gpt.SeqLen, gpt.VocabSize), y))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The gpt example trains over a symbolic batch (`--max-batch 2`, a regression: its step stopped
// at the embedding's gradient, "eq: operand sizes differ"). The step built once at batch 1 means
// what the static build at batch 1 means (the reference interpreter, f32's tolerance), and Fit
// trains 3 rows in batches of 2 as steps of 2 and 1 rows, on the memchecked simulator to the
// reference interpreter's parameters.
func TestFitSymbolicBatchGPT(t *testing.T) {
	const rows, batch = 3, 2
	l := Loss{Name: MSELoss}
	m := buildModel(t, gpt.Model, l, frontend.WithMaxBatch(batch))
	s, err := m.Step(NewSGD(0.05), Options{})
	if err != nil {
		t.Fatal(err)
	}
	at1, err := ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: 1})
	if err != nil {
		t.Fatal(err)
	}
	static, err := buildModel(t, gpt.Model, l, frontend.WithBatch(1)).Step(NewSGD(0.05), Options{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params, err := tensor.SeededValues(static.Graph, 9)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(static.Graph, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.Run(at1, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the symbolic step at batch 1 has %d outputs, the static one %d", len(got), len(want))
	}
	rel, abs := tolerance.Tolerance(ir.F32, false, 256)
	for name, w := range want {
		g := got[name]
		if g == nil || !g.Type.Equal(w.Type) {
			t.Fatalf("output %s: %v, the static step's %s", name, g, w.Type)
		}
		for i := range w.Len() {
			if !tolerance.Within(g.At(i), w.At(i), rel, abs) {
				t.Fatalf("%s[%d] = %v at batch 1, the static step's %v", name, i, g.At(i), w.At(i))
			}
		}
	}

	// The modeled cost, for docs/perf.md (go test -v -run TestFitSymbolicBatchGPT ./train/): at
	// its bound the symbolic step plans what the static step at 2 plans, a kernel more at most
	// (TestSymbolicStepCost's rule).
	opt := StepCompilerOptions(compiler.Options{})
	res, err := compiler.Compile(s.Graph, opt)
	if err != nil {
		t.Fatal(err)
	}
	bound, at2, one := res.Passes.Stats, stepCost(t, s, opt, 2), stepCost(t, s, opt, 1)
	logCosts(t, []string{"symbolic, at the bound 2", "static at 2", "static at 1"}, bound, at2, one)
	if bound.Kernels > at2.Kernels+1 || bound.ModeledKernelTimeUS > 1.01*at2.ModeledKernelTimeUS {
		t.Errorf("the symbolic step at its bound plans %d kernels in %.3f µs, the static step at 2 %d in %.3f µs",
			bound.Kernels, bound.ModeledKernelTimeUS, at2.Kernels, at2.ModeledKernelTimeUS)
	}

	if testing.Short() {
		t.Skip("-short: trains the gpt example on the simulator (a minute)")
	}
	d := gptRows(t, rows)
	fit := func(dev *simdev.Device) (*FitResult, []int) {
		var steps []int
		o := FitOptions{Optimizer: NewSGD(0.05), Train: d, Epochs: 1, Seed: 4,
			OnStep: func(s StepEnd) error { steps = append(steps, s.Rows); return nil }}
		if dev != nil {
			o.Device = dev
		}
		res, err := Fit(m, o)
		if err != nil {
			t.Fatal(err)
		}
		return res, steps
	}
	wantFit, wantSteps := fit(nil)
	gotFit, gotSteps := fit(simdev.New(simdev.Options{}))
	if !slices.Equal(gotSteps, []int{2, 1}) || !slices.Equal(wantSteps, gotSteps) {
		t.Errorf("steps of %v rows on the simulator, %v on the reference, want [2 1]", gotSteps, wantSteps)
	}
	compareParams(t, gotFit, wantFit)
	if g, w := gotFit.Epochs[0].Train.Loss, wantFit.Epochs[0].Train.Loss; !tolerance.Within(g, w, rel, abs) {
		t.Errorf("train loss %v on the simulator, %v on the reference", g, w)
	}
}
