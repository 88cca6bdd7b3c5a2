package cuda_test

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
)

// CUDA graphs of a program with specializations: a recording is of one variant's kernels, so
// the buckets key on the variant too; runs replay the recording of their own sizes and variant,
// equal to the reference interpreter.
func TestGraphVariantBuckets(t *testing.T) {
	g, err := frontend.Build("chain", symbolicChain)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Specialize: map[string][]int{"batch": {4}}})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	prog, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	_, params := values(t, g, 1)
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if !prog.UseGraphs(true) {
		t.Fatal("the device does not record graphs")
	}
	for i, run := range []struct {
		batch   int64
		want    executor.GraphUse
		variant string
	}{
		{3, executor.GraphCaptured, "batch in [1,4]"}, {6, executor.GraphCaptured, "batch in [5,8]"},
		{3, executor.GraphReplayed, "batch in [1,4]"}, {6, executor.GraphReplayed, "batch in [5,8]"},
	} {
		st, err := ops.Instantiate(g, map[string]int64{"batch": run.batch})
		if err != nil {
			t.Fatal(err)
		}
		inputs, _ := values(t, st, uint64(10+i))
		got, err := prog.Run(inputs)
		if err != nil {
			t.Fatalf("run %d (batch %d): %v", i, run.batch, err)
		}
		if got.Graph != run.want || prog.Variant() != run.variant {
			t.Errorf("run %d (batch %d): %q, variant %q; want %q, %q", i, run.batch, got.Graph, prog.Variant(), run.want, run.variant)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		if o := check.Compare("y", got.Outputs["y"], want["y"], false); !o.Pass() {
			t.Errorf("run %d (batch %d): %d elements outside tolerance; first %s", i, run.batch, o.Bad, o.First)
		}
	}
	if got, _ := prog.GraphBuckets(); !slices.Equal(got, []string{"batch=3,variant=0", "batch=6,variant=1"}) {
		t.Errorf("GraphBuckets() = %q", got)
	}
}
