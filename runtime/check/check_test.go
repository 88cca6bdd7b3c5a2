package check_test

import (
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
)

// Values returns seeded weights and inputs for g, as `gcomp check` makes them.
func values(t *testing.T, g *ir.Graph, seed uint64) (inputs, params map[string]*tensor.Tensor) {
	t.Helper()
	inputs, params = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = tensor.RandomInput(v, seed)
	}
	for _, p := range g.Params() {
		w, err := tensor.Initialize(p, seed)
		if err != nil {
			t.Fatal(err)
		}
		params[p.Name] = w
	}
	return inputs, params
}

// Every example compiles, runs on the simulator with all checks on, and matches the reference.
func TestExamples(t *testing.T) {
	for _, m := range []struct {
		name  string
		model func(*frontend.Builder)
		slow  bool
	}{
		{"linreg", linreg.Model, false}, {"mlp", mlp.Model, false}, {"cnn", cnn.Model, true},
		{"rnn", rnn.Model, false}, {"lstm", lstm.Model, true}, {"transformer", transformer.Model, false},
		{"gpt", gpt.Model, true},
	} {
		t.Run(m.name, func(t *testing.T) {
			if m.slow && testing.Short() {
				t.Skip("-short")
			}
			g, err := frontend.Build(m.name, m.model)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			inputs, params := values(t, g, 1)
			rep, err := check.Run(res.Artifact, inputs, params)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range rep.Outputs {
				if !o.Pass() {
					t.Errorf("%s: %d elements outside tolerance (max abs %g, max rel %g); first %s", o.Name, o.Bad, o.MaxAbs, o.MaxRel, o.First)
				}
			}
			if len(rep.Kernels) != len(res.Artifact.Plan.Kernels) {
				t.Errorf("%d kernel runs, plan has %d kernels", len(rep.Kernels), len(res.Artifact.Plan.Kernels))
			}
		})
	}
}
