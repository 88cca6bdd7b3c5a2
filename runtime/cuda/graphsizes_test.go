package cuda_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
)

// symbolicChain is a model with dims whose build has a persistent kernel of symbolic stages
// (the chain of small products) and a symbolic row kernel whose grid follows the rows (softmax).
func symbolicChain(b *frontend.Builder) {
	x := b.Input("x", ir.F32, b.Dim("batch", 1, 8), 16)
	w := b.Param("w", ir.T(ir.F32, 16, 16), frontend.Uniform(-0.5, 0.5))
	for range 4 {
		x = frontend.Linear(x, w, nil).Tanh()
	}
	b.Output("y", x.Softmax(-1))
}

// checkSizeBuckets runs symbolicChain on dev with CUDA graphs, limited to two sets of sizes:
// the first run at a batch records a graph, a later one at the same batch replays it with its
// own inputs, a third batch past the limit launches kernel by kernel; every run equals the
// reference interpreter at its sizes. It returns how many runs launched a graph.
func checkSizeBuckets(t *testing.T, dev executor.Device) int {
	g, err := frontend.Build("chain", symbolicChain)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	persistent := false
	for _, k := range res.Artifact.Plan.Kernels {
		persistent = persistent || strings.HasSuffix(k.Name, "_persistent") && slices.ContainsFunc(k.Args, func(a artifact.Arg) bool { return a.Kind == artifact.ArgSize })
	}
	if !persistent {
		t.Fatal("the build has no persistent kernel")
	}
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
	if err := prog.SetGraphBuckets(0); err == nil {
		t.Error("SetGraphBuckets(0) succeeded")
	}
	if err := prog.SetGraphBuckets(2); err != nil {
		t.Fatal(err)
	}
	grids := map[int64][]executor.KernelRun{}
	graphs := 0
	for i, run := range []struct {
		batch int64
		want  executor.GraphUse
	}{
		{3, executor.GraphCaptured}, {3, executor.GraphReplayed}, {5, executor.GraphCaptured},
		{3, executor.GraphReplayed}, {7, executor.GraphFull}, {5, executor.GraphReplayed}, {7, executor.GraphFull},
	} {
		st, err := ops.Instantiate(g, map[string]int64{"batch": run.batch})
		if err != nil {
			t.Fatal(err)
		}
		inputs, _ := values(t, st, uint64(10+i)) // other values at every run: a replay must read them
		got, err := prog.Run(inputs)
		if err != nil {
			t.Fatalf("run %d (batch %d): %v", i, run.batch, err)
		}
		if got.Graph != run.want {
			t.Errorf("run %d (batch %d): %q, want %q", i, run.batch, got.Graph, run.want)
		}
		if got.Graph != executor.GraphFull {
			graphs++
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		if o := check.Compare("y", got.Outputs["y"], want["y"], false); !o.Pass() {
			t.Errorf("run %d (batch %d): %d elements outside tolerance; first %s", i, run.batch, o.Bad, o.First)
		}
		if prev, ok := grids[run.batch]; ok && !slices.EqualFunc(prev, got.Kernels, func(a, b executor.KernelRun) bool { return a.Name == b.Name && a.Grid == b.Grid }) {
			t.Errorf("run %d (batch %d): kernels %v, the earlier run's at this batch %v", i, run.batch, got.Kernels, prev)
		}
		grids[run.batch] = got.Kernels
	}
	if slices.Equal(kernelGrids(grids[3]), kernelGrids(grids[7])) {
		t.Errorf("batches 3 and 7 report the same grids %v: the softmax's should follow the rows", kernelGrids(grids[3]))
	}
	if got, limit := prog.GraphBuckets(); !slices.Equal(got, []string{"batch=3", "batch=5"}) || limit != 2 {
		t.Errorf("GraphBuckets() = %q, %d; want [batch=3 batch=5], 2", got, limit)
	}
	return graphs
}

func kernelGrids(ks []executor.KernelRun) [][3]int {
	var g [][3]int
	for _, k := range ks {
		g = append(g, k.Grid)
	}
	return g
}

// CUDA graphs of a program with dims, through the CUDA device over the simulator-backed driver:
// one recording per set of sizes, replayed at those sizes, none past the limit.
func TestGraphSizeBuckets(t *testing.T) {
	drv := simdriver.New()
	dev, err := cuda.Open(drv, 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	graphs := checkSizeBuckets(t, dev)
	if n := drv.GraphLaunches(); n != graphs {
		t.Errorf("the driver launched %d graphs, the runs say %d", n, graphs)
	}
}
