package passes_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// checkPipeline is the property: the pipeline succeeds with every checker on, the plan
// checker passes, the arena is no smaller than its lower bound, and the kernels compute bit for
// bit what the source graph computes.
func checkPipeline(t *testing.T, g *ir.Graph, opt passes.Options, seed uint64) *passes.Result {
	t.Helper()
	defer func() {
		if p := recover(); p != nil { // a crash is one seed's failure, not the end of the run
			t.Fatalf("panic: %v\n%s", p, g)
		}
	}()
	if err := ops.Verify(g); err != nil {
		t.Fatalf("generator made an invalid graph: %v\n%s", err, g)
	}
	opt.VerifyEach = true
	res, err := passes.Run(g, opt)
	if err != nil {
		t.Fatalf("%v\n%s", err, g)
	}
	if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
		t.Fatalf("%v\n%s", err, res.Kernels)
	}
	// The bounds are bounds: no aligned plan beats lower_bound_aligned_bytes, which is at least
	// lower_bound_bytes (exact sizes).
	if p := res.Plan; p.ArenaBytes < p.AlignedLowerBoundBytes || p.AlignedLowerBoundBytes < p.LowerBoundBytes {
		t.Fatalf("arena %d, lower bound %d, unaligned bound %d\n%s", p.ArenaBytes, p.AlignedLowerBoundBytes, p.LowerBoundBytes, p)
	}
	checkEquivalent(t, g, res, seed)
	return res
}

func TestRandomGraphs(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 50
	}
	persistent := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 7))
		g := randgraph.Graph(r)
		opt := passes.Options{}
		if seed%3 == 1 {
			// Tight bounds exercise the size and operand limits.
			opt.Fusion = passes.FusionOptions{MaxOps: 1 + r.IntN(6), MaxReads: 1 + r.IntN(3), MaxRow: 1 + r.IntN(8),
				PersistStages: 2 + r.IntN(3), PersistShared: 16 * (1 + r.IntN(64))}
		}
		switch seed % 5 {
		case 2:
			opt.DisablePasses = []string{"fuse"}
		case 3:
			// Fusion and planning must cope with dead values, duplicates and foldable constants.
			opt.DisablePasses = []string{"dce", "fold", "simplify", "cse", "late-dce", "schedule"}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			for _, k := range checkPipeline(t, g, opt, seed).Kernels.Kernels {
				if k.Kind == passes.Persistent {
					persistent++
				}
			}
		})
	}
	// The generator's small graphs form persistent kernels: the property covers them.
	if persistent == 0 {
		t.Errorf("no persistent kernel in %d random graphs", n)
	}
	t.Logf("%d persistent kernels in %d random graphs", persistent, n)
}

func FuzzPipeline(f *testing.F) {
	for _, s := range []string{"", "softmax", "layernorm", "matmul", "\x00\x01\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, seed := randgraph.FromBytes(data)
		g := randgraph.Graph(r)
		opt := passes.Options{}
		if len(data) > 0 && data[0]%2 == 1 {
			opt.Fusion = passes.FusionOptions{MaxOps: 1 + r.IntN(6), MaxReads: 1 + r.IntN(3), MaxRow: 1 + r.IntN(8)}
		}
		checkPipeline(t, g, opt, seed)
	})
}

// The corpus has an input for each kind of graph the generator makes (kind-NAME).
func TestFuzzCorpusKinds(t *testing.T) {
	randgraph.CheckCorpusKinds(t, filepath.Join("testdata", "fuzz", "FuzzPipeline"))
}
