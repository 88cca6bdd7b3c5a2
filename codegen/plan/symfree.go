package plan

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// SymProduct is the product of s's entries at dims: a product's K from an operand's sizes and
// its contracting dims.
func SymProduct(s []sym.Expr, dims []int) sym.Expr {
	p := sym.Const(1)
	for _, d := range dims {
		p = sym.Mul(p, s[d])
	}
	return p
}

// SymFree is the product of s's free dims (neither batch nor contract): a product's M from its
// left operand's sizes, N from its right one's.
func SymFree(s []sym.Expr, batch, contract []int) sym.Expr {
	p := sym.Const(1)
	for d, e := range s {
		if !slices.Contains(batch, d) && !slices.Contains(contract, d) {
			p = sym.Mul(p, e)
		}
	}
	return p
}

// SameSizeOutputs groups g's outputs by their sizes at the run (indices into g.Outputs, in
// order): a concat kernel computes each group's outputs in one loop.
func SameSizeOutputs(g *ir.Graph, sizes map[*ir.Value][]sym.Expr) [][]int {
	var groups [][]int
	var keys []string
	for oi, o := range g.Outputs {
		key := fmt.Sprint(SymSizes(o.Value, sizes))
		if gi := slices.Index(keys, key); gi >= 0 {
			groups[gi] = append(groups[gi], oi)
			continue
		}
		keys = append(keys, key)
		groups = append(groups, []int{oi})
	}
	return groups
}
