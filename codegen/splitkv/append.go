package splitkv

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Appended returns the update_slice whose result attention op att reads as its operand i (1 for
// K, 2 for V) when the split-KV template can append the update's rows to the cache itself
// (FlashAttention's flash_attn_with_kvcache with k_new and v_new): att is one Of takes, and the
// operand is the update's result, rows written along axis 2 of [B, KVH, S, E], through views
// that move nothing (a transpose and its inverse). Every block then reads the keys
// [p, p+T) from the update rather than the cache and one block per (batch entry, KV head)
// writes them, so no block reads what another writes. The passes (appendkv) and codegen/ptx
// ask this same question.
func Appended(att *ir.Value, i int) (*ir.Value, bool) {
	if _, ok := Of(att); !ok || i < 1 || i > 2 {
		return nil, false
	}
	a := att.Args[i]
	u, off, st, ok := ops.StridedView(a)
	if !ok || u.Op != ops.UpdateSliceOp || u.Attrs.Int("axis", 0) != 2 || off != 0 || !u.Type.Shape.Equal(a.Type.Shape) ||
		len(u.Args[1].Type.Shape) != 4 || u.Args[1].Type.Shape[2] < 1 {
		return nil, false
	}
	want := a.Type.Shape.Strides()
	for d, n := range a.Type.Shape {
		if n > 1 && st[d] != want[d] {
			return nil, false
		}
	}
	return u, true
}

// AppendedRows is how many elements an attention op's appended updates write (the step's rows
// of K and V), 0 when it appends none.
func AppendedRows(att *ir.Value) int {
	n := 0
	for i := 1; i <= 2; i++ {
		if u, ok := Appended(att, i); ok {
			n += u.Args[1].Type.Shape.NumElements()
		}
	}
	return n
}
