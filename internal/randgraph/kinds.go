package randgraph

import (
	"math/rand/v2"

	"github.com/gcomp/gcomp/ir"
)

// kinds are the graphs Graph draws, with their weights out of the total. Each targeted kind
// stresses one thing the mixed graph reaches rarely or never; an independent generator written
// from docs/ir.md and docs/ops.md found defects of each of these kinds that the mixed graph
// alone had missed.
var kinds = []struct {
	name   string
	weight int
	build  func(*rand.Rand) *ir.Graph
}{
	{"mixed", 8, mixed},
	{"contraction", 3, targeted("contraction", contractionGraph)}, // views into operands and epilogues, vector sides
	{"zero_size", 2, targeted("zero_size", zeroSizeGraph)},        // empty dims, and what turns them back into elements
	{"scalar", 1, targeted("scalar", scalarGraph)},                // rank-0 values
	{"inplace", 1, targeted("inplace", inplaceGraph)},             // chains cut at the fusion reads limit, temps placed in place
	{"split", 1, targeted("split", splitGraph)},                   // split full reductions feeding each other
	{"persistent", 2, targeted("persistent", persistentGraph)},    // runs of small kernels with pooling and gathers, odd rows
	{"extremes", 2, targeted("extremes", extremesGraph)},          // integers at their dtype's ends
	{"random", 1, targeted("random", randomGraph)},                // philox_uniform and Dropout's mask
}

// Kinds returns the names of the kinds of graph Graph draws, which it gives the graphs.
func Kinds() []string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	return names
}

func targeted(name string, build func(*builder)) func(*rand.Rand) *ir.Graph {
	return func(r *rand.Rand) *ir.Graph {
		b := newBuilder(r, name)
		build(b)
		return b.g
	}
}
