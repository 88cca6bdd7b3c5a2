package plan

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// LayerSized reports whether k's Sizes are those of its layers only (what the compiler gives a
// row loop kernel that reads or writes them): inputs read through slices alone, and concats
// used only as outputs. A copy kernel's sizes (codegen/ptx's symcopy.go) cover every value of its views.
func LayerSized(k Kernel) bool {
	g := k.Graph
	used := map[*ir.Value][]*ir.Value{}
	for _, v := range g.Values {
		for _, a := range v.Args {
			used[a] = append(used[a], v)
		}
	}
	for v := range k.Sizes {
		switch {
		case v.Op == ir.OpInput:
			for _, u := range used[v] {
				if u.Op != "slice" {
					return false
				}
			}
		case v.Op != "concat" || len(used[v]) > 0:
			return false
		}
	}
	return k.Sizes != nil
}

// LayerOffset is the element offset of the slice starting at start of a value whose sizes are
// sizes (expressions over the dims): Σ start[i]·∏_{j>i} sizes[j]. Both producers take a layer's
// offset parameter from it.
func LayerOffset(start []int, sizes []sym.Expr) sym.Expr {
	off, stride := sym.Const(0), sym.Const(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		off = sym.Add(off, sym.Scale(stride, int64(start[i])))
		stride = sym.Mul(stride, sizes[i])
	}
	return off
}
