package swish_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvrtc"
	"github.com/gcomp/gcomp/compiler"
	_ "github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
)

// The example loads as gcomp loads it, and its kernels (gcomp's matmuls and the CUDA swish)
// match the reference on the simulator with every check on.
func TestModel(t *testing.T) {
	nvrtc.Require(t)
	g, err := load.File("model.go", load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params, err := tensor.SeededValues(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.Run(res.Artifact, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outputs {
		if !o.Pass() {
			t.Errorf("%s: %d elements outside tolerance; first %s", o.Name, o.Bad, o.First)
		}
	}
	var names []string
	for _, k := range res.Artifact.Plan.Kernels {
		names = append(names, k.Name)
	}
	if len(names) != 3 || names[1] != "k1_custom_swish" {
		t.Errorf("kernels %v, want matmul+bias, swish, matmul", names)
	}
}
