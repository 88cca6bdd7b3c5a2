package nvvm

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ops"
)

// rowLength reports whether k reduces a symbolic last dim or broadcasts per-row values back along
// one (unfused attention's softmax over the keys and its gradient: compiler/symrowlen.go). This
// package's row template keeps the bound's row length and its loop indexes a broadcast at the
// bound's sizes, so codegen/backend's nvvm producer takes codegen/ptx's entry (symrowlen.go
// there).
func rowLength(k plan.Kernel) bool {
	for v, s := range k.Sizes {
		if v.Op == "broadcast_in_dim" {
			return true // codegen/ptx's row broadcast loop: every key is one
		}
		if len(s) == 0 {
			continue
		}
		if _, ok := s[len(s)-1].IsConst(); ok {
			continue
		}
		for _, u := range k.Graph.Values {
			if ops.ClassOf(u.Op) == ops.Reduce && len(u.Args) > 0 && u.Args[0] == v {
				return true
			}
		}
	}
	return false
}
