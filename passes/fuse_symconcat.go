package passes

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// A concat along a symbolic dim (a cache grown by concatenation, past+1 keys) runs at symbolic
// sizes only in a loop kernel of elementwise ops and views (codegen/ptx's symconcat_fused.go):
// the row and contraction templates read their operands from buffers at the run's sizes, not
// through a concat's branches. So the fuser keeps such a concat out of any kernel that reduces
// or multiplies, and those kernels read its buffer instead, as they read every operand a loop
// kernel writes. A static graph has no such concat, so its kernels are unchanged.

// concatsAlongSymbolic reports whether v concatenates along a symbolic dim.
func concatsAlongSymbolic(v *ir.Value) bool {
	if v.Op != "concat" {
		return false
	}
	ax := v.Attrs.Int("axis", 0)
	if ax >= len(v.Type.Sym) {
		return false
	}
	_, static := v.Type.Sym[ax].IsConst()
	return !static
}

// holdsSymbolicConcat reports whether gr computes a concat along a symbolic dim.
func (gr *group) holdsSymbolicConcat() bool {
	for w := range gr.members {
		if concatsAlongSymbolic(w) {
			return true
		}
	}
	return false
}

// splitsSymbolicConcat reports whether v joining gr would put a concat along a symbolic dim
// beside a reduction or a product: v is such a concat and gr reduces, multiplies or is a row
// group waiting for its reduction, or v reduces or multiplies and gr holds such a concat.
func splitsSymbolicConcat(v *ir.Value, gr *group) bool {
	if concatsAlongSymbolic(v) {
		return gr.kind != Loop || gr.contraction != nil || gr.hasReduction()
	}
	c := ops.ClassOf(v.Op)
	return (c == ops.Reduce || c == ops.Contraction) && gr.holdsSymbolicConcat()
}
