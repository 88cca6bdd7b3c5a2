package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

var exampleModels = []struct {
	name  string
	model func(*frontend.Builder)
}{
	{"linreg", linreg.Model},
	{"mlp", mlp.Model},
	{"cnn", cnn.Model},
	{"rnn", rnn.Model},
	{"lstm", lstm.Model},
	{"transformer", transformer.Model},
	{"gpt", gpt.Model},
}

// Every example compiles with the checkers on after every pass, and its kernels compute exactly
// what the source graph computes.
func TestExamples(t *testing.T) {
	for _, ex := range exampleModels {
		t.Run(ex.name, func(t *testing.T) {
			g, err := frontend.Build(ex.name, ex.model)
			if err != nil {
				t.Skipf("example does not build (being edited?): %v", err)
			}
			res, err := passes.Run(g, passes.Options{VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
				t.Fatal(err)
			}
			s := res.Stats
			t.Logf("kernels %d eager %d; dram %d eager %d ideal %d (%.2f×); arena %d lower %d (%.3f×) naive %d",
				s.Kernels, s.EagerKernels, s.DRAMBytes, s.EagerDRAMBytes, s.IdealDRAMBytes, float64(s.DRAMBytes)/float64(s.IdealDRAMBytes),
				s.ArenaBytes, s.LowerBoundBytes, float64(s.ArenaBytes)/float64(max(1, s.LowerBoundBytes)), s.NaiveBytes)
			checkEquivalent(t, g, res, 1)
		})
	}
}
