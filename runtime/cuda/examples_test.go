package cuda_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// values returns seeded inputs and weights for g, as gcomp check makes them.
func values(t *testing.T, g *ir.Graph, seed uint64) (inputs, params map[string]*tensor.Tensor) {
	t.Helper()
	inputs, params, err := tensor.SeededValues(g, seed)
	if err != nil {
		t.Fatal(err)
	}
	return inputs, params
}

// runExample compiles model for tgt, runs it on dev with seeded values and
// compares every output with the reference interpreter. It returns the
// loaded program (closed when the test ends) and its inputs.
func runExample(t *testing.T, dev executor.Device, name string, model func(*frontend.Builder), tgt ptx.Target) (*executor.Program, map[string]*tensor.Tensor) {
	t.Helper()
	g, err := frontend.Build(name, model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Target: tgt})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params := values(t, g, 1)
	prog, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	got, err := prog.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range g.Outputs {
		o := check.Compare(v.Name, got.Outputs[v.Name], want[v.Name], res.Artifact.Plan.TF32)
		if !o.Pass() {
			t.Errorf("%s: %d elements outside tolerance (max abs %g, max rel %g); first %s", o.Name, o.Bad, o.MaxAbs, o.MaxRel, o.First)
		}
	}
	if len(got.Kernels) != len(res.Artifact.Plan.Kernels) {
		t.Errorf("%d kernel runs, the plan has %d kernels", len(got.Kernels), len(res.Artifact.Plan.Kernels))
	}
	return prog, inputs
}
