package plan

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Align is the largest n dividing e at every size: the gcd of its coefficients (0 for 0).
func Align(e sym.Expr) int {
	c, ms, _ := e.Monomials()
	g := max(c, -c)
	for _, m := range ms {
		a, b := g, max(m.Coef, -m.Coef)
		for b != 0 {
			a, b = b, a%b
		}
		g = a
	}
	return int(g)
}

// ChunkSizes follows the contiguous dim of a tensor-core operand read through views (the last
// of group, its contracted dims where k is contiguous, else its free dims) down view to its
// buffer, and returns the sizes that must be multiples of c at the run for its chunks of c
// elements to be contiguous and aligned there, those a multiple of c at every size left out; ok
// is false when no run's sizes allow them (a constant size c does not divide, a strided or
// broadcast contiguous dim, or one that is not the buffer's last). sizes gives a symbolic
// kernel's sizes; with nil every size is its shape's constant, and the answer is the build's.
// Both producers' generic copiers decide their 16-byte copies by it.
func ChunkSizes(view *ir.Value, group []int, sizes map[*ir.Value][]sym.Expr, c int) (conds []sym.Expr, ok bool) {
	v := view
	s := SymSizes(v, sizes)
	d := len(s) - 1
	if len(group) == 0 || group[len(group)-1] != d {
		return nil, false
	}
	need := func(e sym.Expr) bool {
		if Align(e)%c == 0 {
			return true
		}
		if isConst(e) {
			return false
		}
		if !slices.ContainsFunc(conds, e.Equal) {
			conds = append(conds, e)
		}
		return true
	}
	// The copy's coordinate in the group is a multiple of c: so is its coordinate in the dim,
	// and the chunk stays inside the dim, when c divides the dim's size.
	if !need(s[d]) {
		return nil, false
	}
	for {
		out := SymSizes(v, sizes)
		switch v.Op {
		case ir.OpInput, ir.OpParam:
			// Every stride but the last is a multiple of the last size.
			if d != len(out)-1 || !need(out[d]) {
				return nil, false
			}
			return conds, true
		}
		in := SymSizes(v.Args[0], sizes)
		switch v.Op {
		case "transpose":
			d = v.Attrs.Ints("perm")[d]
		case "slice":
			start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
			if step != nil && step[d] != 1 || start[d]%c != 0 {
				return nil, false
			}
		case "broadcast_in_dim":
			from := -1
			for i, o := range v.Attrs.Ints("dims") {
				if o == d && !IsOne(in[i]) {
					from = i
				}
			}
			if from < 0 {
				return nil, false
			}
			d = from
		case "reshape":
			// Linear indices: c consecutive ones from a multiple of c stay in one row of the
			// input's last dim when c divides it.
			if d != len(out)-1 || len(in) == 0 || !need(out[d]) || !need(in[len(in)-1]) {
				return nil, false
			}
			d = len(in) - 1
		default:
			return nil, false
		}
		v = v.Args[0]
	}
}
