package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
)

// The update template at symbolic sizes, as codegen/ptx's symupdate.go: a KV cache [batch,
// heads, max_seq, head_dim] whose batch is symbolic holds the run's rows first, exactly where
// they are at the bound, and each of them takes only its own update rows and position, so the
// bound's index arithmetic runs on the first rows only. The element count (the update's in
// place, the result's otherwise) is the size parameter bounding the grid-stride loop, and the
// grid follows it at launch (a loop's work); rows past the run are not touched.

// symUpdate returns the update template's parameters and work: plan.Params and none for a static
// kernel; for a symbolic one (Kernel.Rows: the bound's rows) the element count units at the
// run's sizes after them.
func symUpdate(k plan.Kernel, units int) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return plan.Params(k.Graph), nil, nil
	}
	if k.Rows <= 0 {
		return nil, nil, fmt.Errorf("an update_slice at symbolic sizes needs its row count (the cache's symbolic batch)")
	}
	args, scale, err := symArgs(k, units, "element count")
	return args, &plan.SymWork{Vector: 1, Block: plan.LoopBlock, MaxBlocks: plan.MaxLoopBlocks, Scale: scale}, err
}
