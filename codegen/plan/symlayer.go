package plan

import "github.com/gcomp/gcomp/ir"

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
