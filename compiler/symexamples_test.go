package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/paramcheck"
)

// maxBatch is the bound every example is built at over a symbolic batch; each runs at 1, a prime
// and the bound.
const maxBatch = 4

var batchesToRun = []int64{1, 3, maxBatch}

// symbolicRefusals are the examples that do not yet build once for every batch, each with the
// DSL's or the compiler's refusal (a part of its message). The list shrinks as support lands: an
// example that builds is taken off it, or the test fails.
var symbolicRefusals = map[string]string{}

// Every example builds once over a symbolic batch in [1, maxBatch] (frontend.WithMaxBatch, what
// `gcomp build --max-batch` does) and runs on the memchecked simulator at batches 1, 3 and
// maxBatch, smallest first, within tolerance of the reference interpreter at each; or it is
// refused with its message in symbolicRefusals.
func TestExamplesSymbolicBatch(t *testing.T) {
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			if ex.Slow && testing.Short() {
				t.Skip("slow on the simulator")
			}
			want, refused := symbolicRefusals[ex.Name]
			g, err := frontend.Build(ex.Name, ex.Model, frontend.WithMaxBatch(maxBatch))
			if err == nil {
				_, err = compiler.Compile(g, compiler.Options{})
			}
			switch {
			case refused && err == nil:
				t.Fatalf("builds over a symbolic batch now: take it off symbolicRefusals (%q)", want)
			case refused && !strings.Contains(err.Error(), want):
				t.Fatalf("refused with %q, want %q", err, want)
			case refused:
				return
			case err != nil:
				t.Fatal(err)
			}
			if len(g.Dims) != 1 || g.Dims[0].Name != frontend.BatchDim || g.Dims[0].Hi != maxBatch {
				t.Fatalf("dims %v, want batch in [1, %d]", g.Dims, maxBatch)
			}
			// The examples' own initialization zeroes their biases (LayerNorm's, Linear's in
			// GPT-2): drawn nonzero, a kernel that drops one fails.
			paramcheck.Randomize(g, 0.1)
			var envs []map[string]int64
			for _, n := range batchesToRun {
				envs = append(envs, map[string]int64{frontend.BatchDim: n})
			}
			checkRowsAt(t, g, compiler.Options{}, envs, 256, nil)
		})
	}
}
