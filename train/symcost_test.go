package train

import (
	"testing"

	"github.com/gcomp/gcomp/compiler"
	fashionmlp "github.com/gcomp/gcomp/examples/fashion/mlp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// The modeled cost of Fashion-MNIST's MLP train step (cross-entropy, SGD) over a symbolic batch
// in [1, 64], built once, beside the static steps at 64 and at 13 (a prime). At the bound the
// symbolic step plans what the static step at 64 plans (the persistent-kernel pass stays off for
// both), but for one kernel: the loss gradient's seed −1/count, a constant the static step folds;
// the run at 13 launches the bound's kernels over fewer rows, which the static step at 13 models
// from below. docs/perf.md records the numbers (go test -v -run
// TestSymbolicStepCost ./train/).
func TestSymbolicStepCost(t *testing.T) {
	fwd, err := frontend.Build("fashion_mlp", fashionmlp.Model, frontend.WithMaxBatch(64))
	if err != nil {
		t.Fatal(err)
	}
	fwdTrain, err := frontend.Build("fashion_mlp", fashionmlp.Model, frontend.WithMaxBatch(64), frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(fwd, fwdTrain, Loss{Name: CrossEntropyLoss})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Step(NewSGD(0.05), Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := StepCompilerOptions(compiler.Options{})
	res, err := compiler.Compile(s.Graph, opt)
	if err != nil {
		t.Fatal(err)
	}
	bound := res.Passes.Stats
	at64, at13 := stepCost(t, s, opt, 64), stepCost(t, s, opt, 13)
	logCosts(t, []string{"symbolic, at the bound 64", "static at 64", "static at 13"}, bound, at64, at13)
	// One more kernel at most: the loss's gradient seed −1/count, which the static step folds.
	if bound.Kernels > at64.Kernels+1 || bound.ModeledKernelTimeUS > 1.01*at64.ModeledKernelTimeUS {
		t.Errorf("the symbolic step at its bound plans %d kernels in %.3f µs, the static step at 64 %d in %.3f µs",
			bound.Kernels, bound.ModeledKernelTimeUS, at64.Kernels, at64.ModeledKernelTimeUS)
	}
	if at13.ModeledKernelTimeUS >= at64.ModeledKernelTimeUS {
		t.Errorf("the step at 13 models %.3f µs, not less than at 64 (%.3f µs)", at13.ModeledKernelTimeUS, at64.ModeledKernelTimeUS)
	}
}

// stepCost is the passes' cost report of the symbolic step s at batch n, the persistent-kernel
// pass off (the static step at n, as the symbolic one runs it).
func stepCost(t *testing.T, s *StepGraph, opt compiler.Options, n int64) *passes.Stats {
	t.Helper()
	g, err := ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: n})
	if err != nil {
		t.Fatal(err)
	}
	popt := opt.Passes
	popt.DisablePasses = append(popt.DisablePasses, "persist")
	r, err := passes.Run(g, popt)
	if err != nil {
		t.Fatal(err)
	}
	return r.Stats
}

// logCosts logs one line per named cost report, for docs/perf.md.
func logCosts(t *testing.T, names []string, stats ...*passes.Stats) {
	t.Helper()
	for i, s := range stats {
		t.Logf("%-26s %2d kernels, %8d DRAM bytes, %7.3f µs in kernels, %7.3f µs on a stream",
			names[i], s.Kernels, s.DRAMBytes, s.ModeledKernelTimeUS, s.ModeledTimeUS)
	}
}
