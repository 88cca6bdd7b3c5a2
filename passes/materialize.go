package passes

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// checkInMemory refuses a kernel graph in which a buffer, or a value a kernel computes, has more
// elements than kernels index with 32-bit integers (ir.MaxElements; ir.Oversize). The IR lets a
// value between two ops be larger, for fused ops to replace before any kernel computes it:
// attention's scores, which the attention pass turns into one attention op (docs/ir.md). A value
// that stayed is refused here, before anything is planned, by its source position in g (the
// pipeline's graph the kernels were built from).
func checkInMemory(g *ir.Graph, kg *KernelGraph) error {
	for _, b := range kg.Buffers {
		if msg := ir.Oversize(b.Type.Shape); msg != "" && b.Writer == nil {
			// The verifier holds inputs and parameters to the limit already; a kernel graph
			// built by hand may not.
			return fmt.Errorf("%s %%%s : %s: %s", b.Kind, b.Name, b.Type, msg)
		}
	}
	// The first value in g's order (the model's) that a kernel computes, rather than the first in
	// the schedule's.
	order := make(map[*ir.Value]int, len(g.Values))
	for i, v := range g.Values {
		order[v] = i
	}
	var err error
	first := len(g.Values)
	for _, k := range kg.Kernels {
		parts := k.Stages
		if len(parts) == 0 {
			parts = []*Kernel{k}
		}
		for _, p := range parts {
			for _, v := range p.Body.Values {
				msg := ir.Oversize(v.Type.Shape)
				if msg == "" || v.Op == ir.OpInput { // a buffer read: checked where it is written
					continue
				}
				what, at := p.Body.FormatAt(v), len(g.Values)
				if o := p.Origins[v]; o != nil {
					what, at = g.FormatAt(o), order[o]
				}
				if err == nil || at < first {
					first = at
					err = fmt.Errorf("%s: kernel %s would compute it: %s (kernels index with 32-bit integers); a value may be larger only when a fused op replaces it, as the attention pass replaces attention's scores", what, k.Name, msg)
				}
			}
		}
	}
	return err
}
