package symtest

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// SizesOver gives g's values, but its products (dot_general, whose sizes the templates derive
// from their operands) and those keep refuses, their sizes with every axis of size n the dim
// named dim. keep nil keeps every value.
func SizesOver(g *ir.Graph, n int, dim string, keep func(*ir.Value) bool) map[*ir.Value][]sym.Expr {
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		if v.Op == "dot_general" || keep != nil && !keep(v) {
			continue
		}
		e := make([]sym.Expr, len(v.Type.Shape))
		for i, m := range v.Type.Shape {
			e[i] = sym.Const(int64(m))
			if m == n {
				e[i] = sym.Sym(dim)
			}
		}
		sizes[v] = e
	}
	return sizes
}
