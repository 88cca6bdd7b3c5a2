package nvvm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/passes"
)

var randomGraphs = flag.Int("random-graphs", 0, "how many random graphs TestPipelineRandomGraphs runs (0: 300, or 40 with -short)")

// Random graphs from internal/randgraph through the pass pipeline, as many (and the same seeds)
// as codegen/ptx's property test: every kernel the NVVM producer takes goes through the
// differential harness; the others must be refused with the template named.
func TestPipelineRandomGraphs(t *testing.T) {
	p := requireProducer(t)
	n := 300
	if testing.Short() {
		n = 40
	}
	if *randomGraphs > 0 {
		n = *randomGraphs
	}
	taken, refused := 0, 0
	for seed := range n {
		all := randomKernels(t, seed)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			kernels, no := supported(t, all)
			taken += len(kernels)
			refused += len(no)
			checkModule(t, p, kernels, uint64(seed*100))
		})
	}
	t.Logf("%d kernels taken, %d refused (templates without an NVVM counterpart)", taken, refused)
	if taken == 0 {
		t.Error("the NVVM producer took no kernel")
	}
}

// randomKernels are the kernels the pass pipeline forms for randgraph's graph of seed, named
// s<seed>_<kernel>.
func randomKernels(t *testing.T, seed int) []plan.Kernel {
	t.Helper()
	g := randgraph.Graph(rand.New(rand.NewPCG(uint64(seed), 3)))
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatalf("seed %d: passes: %v", seed, err)
	}
	var all []plan.Kernel
	for _, kn := range res.Kernels.Kernels {
		all = append(all, kernelOf(kn, fmt.Sprintf("s%d_%s", seed, kn.Name)))
	}
	return all
}
