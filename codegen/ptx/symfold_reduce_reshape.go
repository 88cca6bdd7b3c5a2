package ptx

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Reductions reading views (symfold_reduce_view.go) compute a buffer's index per element, so a
// reshape there re-divides only the dims it changes (plan.ReshapeKept): the heads merged back,
// [2, seq, 2, 4] read as [2, seq, 8], carry the batch and seq coordinates and split the last by
// immediates, as the static kernel does, instead of dividing by seq again. A unit dim's
// coordinate is 0, without a division by 1 (kᵀ's gradient [2, 1, seq, 8]).

// foldLin is lin for a reduction's views: each reshape maps the coordinates of the dims it
// changes only.
func (s *symView) foldLin(b *builder, v *ir.Value, c []string) (*ir.Value, string) {
	for v.Op != ir.OpInput && v.Op != ir.OpParam {
		if v.Op == "reshape" {
			c = s.reshapeCoords(b, v, c)
		} else {
			c = s.operandCoords(b, v, c)
		}
		v = v.Args[0]
	}
	return v, s.linear(b, SymSizes(v, s.sizes), c)
}

// reshapeCoords maps coordinates c of reshape v to its operand's at the run's sizes, carrying
// those of the dims it keeps.
func (s *symView) reshapeCoords(b *builder, v *ir.Value, c []string) []string {
	out, in := SymSizes(v, s.sizes), SymSizes(v.Args[0], s.sizes)
	pre, suf := plan.ReshapeKept(out, in)
	ic := make([]string, len(in))
	copy(ic, c[:pre])
	copy(ic[len(in)-suf:], c[len(out)-suf:])
	if mid := in[pre : len(in)-suf]; len(mid) > 0 {
		copy(ic[pre:], s.foldCoords(b, mid, s.linear(b, out[pre:len(out)-suf], c[pre:len(out)-suf])))
	}
	return ic
}

// foldCoords is delinearize over sizes without their unit dims, whose coordinates are "0"
// (which linear and every view's operandCoords take).
func (s *symView) foldCoords(b *builder, sizes []sym.Expr, x string) []string {
	var kept []sym.Expr
	for _, e := range sizes {
		if !isOne(e) {
			kept = append(kept, e)
		}
	}
	kc := s.delinearize(b, kept, x)
	c := make([]string, len(sizes))
	for i, e := range sizes {
		if c[i] = "0"; !isOne(e) {
			c[i], kc = kc[0], kc[1:]
		}
	}
	return c
}
