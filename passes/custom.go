package passes

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// alone puts custom op v in a kernel of its own: the user's entry computes exactly v, so
// nothing joins it (fits and canJoin refuse a Custom group) and its operands come from
// memory (needsMemory keeps their producers out of their own consumers' kernels). An attention
// op is alone in the same way, but for reshapes of its operands (fits).
func (f *fuser) alone(v *ir.Value) {
	kind := Custom
	switch v.Op {
	case ops.AttentionOp, ops.AttentionGradOp, ops.AttentionLSEOp:
		kind = Attention
		if gr := f.partnerGroup(v); gr != nil { // the forward writes the rows' LSE too; dk with dv
			gr.members[v], gr.outputs[v], f.home[v] = true, true, gr
			gr.space, gr.first = v.Type.Shape, min(gr.first, f.index[v])
			return
		}
	case ops.UpdateSliceOp:
		kind = Update
	}
	gr := &group{kind: kind, space: v.Type.Shape, members: map[*ir.Value]bool{v: true}, views: map[*ir.Value]bool{},
		prologue: map[*ir.Value]bool{}, outputs: map[*ir.Value]bool{v: true}, first: f.index[v]}
	f.groups = append(f.groups, gr)
	f.home[v] = gr
}

// opaque kinds compute their one op with a template of their own: nothing joins them.
func (k Kind) opaque() bool { return k == Custom || k == Update }

// customLabel names a custom kernel after the user's op: "custom_swish".
func customLabel(vals []*ir.Value) string {
	for _, v := range vals {
		if v.Op == ops.CustomOp {
			return "custom_" + v.Attrs.String("name", "")
		}
	}
	return "custom"
}

// feedsCustom reports whether a custom op or update_slice uses v: their kernels read every operand
// from memory, so a literal they use is computed by a kernel that stores it.
func (f *fuser) feedsCustom(v *ir.Value) bool {
	for _, u := range f.users[v] {
		if ops.ClassOf(u.Op) == ops.Custom || u.Op == ops.UpdateSliceOp {
			return true
		}
	}
	return false
}
