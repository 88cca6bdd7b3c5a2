package nvvm

import (
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// gradBiasReader reads the additive bias of the tensor-core dk/dv template (codegen/ptx's
// attention_bwd_bias_mma.go): element (row, key) of the current query head for each of the
// thread's Pᵀ values (keys g and g+8 of the warp).
type gradBiasReader struct {
	w     *mmaAttn
	op    attnOperand
	keyEl [2]value.Value // keys g and g+8 (clamped below S) times the key stride
	head  value.Value    // the current head's first element (retarget)
}

// gradBias sets up the bias reader for keys keyA and keyB, or returns nil when the op has no
// bias (operand 3: the template takes no position mask).
func (w *mmaAttn) gradBias(keyA, keyB value.Value) *gradBiasReader {
	if !w.p.Op.Attrs.Bool("additive", false) {
		return nil
	}
	r := &gradBiasReader{w: w, op: w.ops[3]}
	for i, key := range []value.Value{keyA, keyB} {
		r.keyEl[i] = w.kg.mul(w.kg.umin(key, w.dimSLast()), r.op.strides[3])
	}
	return r
}

// retarget points the reader at query head h.
func (r *gradBiasReader) retarget(h value.Value) {
	if r != nil {
		r.head = r.w.index(r.op, r.w.bIdx, h)
	}
}

// load is bias (row, key i) as f32 where ok (the row is below L and sees the key), else 0. A
// key past S reads key S−1: its Pᵀ row feeds only dk and dv rows that are never stored.
func (r *gradBiasReader) load(row value.Value, i int, ok value.Value) value.Value {
	kg := r.w.kg
	el := kg.add(kg.add(r.head, r.w.stMul(row, r.op, 2)), r.keyEl[i])
	h := kg.b.NewSelect(ok, r.w.load16(r.op, kg.b.NewSelect(ok, el, r.w.offOf(r.op))), constant.NewInt(types.I16, 0))
	return r.w.widen16(h)
}
