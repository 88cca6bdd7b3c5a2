package plan

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// ViewTops returns the views of g with sizes that no other view with sizes reads, down whose
// chain of views lies a buffer: what a reduction through views reads at the run's sizes
// (codegen/ptx's and codegen/nvvm's symfold_reduce_view.go).
func ViewTops(g *ir.Graph, sizes map[*ir.Value][]sym.Expr) []*ir.Value {
	isView := func(v *ir.Value) bool {
		switch v.Op {
		case "transpose", "reshape", "slice", "broadcast_in_dim":
			return sizes[v] != nil
		}
		return false
	}
	under := map[*ir.Value]bool{}
	for _, v := range g.Values {
		if isView(v) {
			under[v.Args[0]] = true
		}
	}
	var tops []*ir.Value
	for _, v := range g.Values {
		if !isView(v) || under[v] {
			continue
		}
		u := v
		for isView(u) {
			u = u.Args[0]
		}
		if u.Op == ir.OpInput || u.Op == ir.OpParam {
			tops = append(tops, v)
		}
	}
	return tops
}
