package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// f32 attention under Target.TF32 (attnmma.FitsTF32): codegen/ptx's tensor-core template on
// mma.sync m16n8k8 .tf32 (its attention_mma.go's tf32 branch), which attention_mma.go follows
// with 4-byte elements and tiles of attnmma.KeysTF32 keys. Q, K and V stay f32 in memory and
// shared memory; every fragment, P's included, is rounded to tf32 by cvt.rna.tf32.f32 (inline
// assembly: libNVVM 11.8 has no intrinsic for it) before its mma. A tf32 A fragment holds
// columns t and t+4 of lane t of a quad where S's accumulators hold 2t and 2t+1, so P·V reads
// V's rows in that permutation, word by word (ldmatrix cannot transpose 32-bit elements). The
// accumulators, the online softmax and the output stay f32, as codegen/ptx's, bit for bit.

const tf32MMAText = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};"

// cvtTF32 rounds f32 x to tf32 (nearest, ties away), as an mma operand register (i32).
func (w *mmaAttn) cvtTF32(x value.Value) value.Value {
	return w.kg.asmRet(types.I32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", x)
}

// roundTF32 rounds fragment registers holding f32 images to tf32 in place.
func (w *mmaAttn) roundTF32(regs []value.Value) {
	for i, r := range regs {
		regs[i] = w.cvtTF32(w.kg.b.NewBitCast(r, types.Float))
	}
}

// tf32Q sets Q's ks-th tf32 A fragment (8 columns): registers (row g, k t), (g+8, t), (g, t+4),
// (g+8, t+4) rounded to tf32; rowEl[i] is column t of rows g and g+8 (row L−1 past L), rowOK[i]
// that the row is below L (else 0).
func (w *mmaAttn) tf32Q(qf []value.Value, rowEl, rowOK [2]value.Value, ks int) {
	qo := w.ops[0]
	for j := range qf {
		x := w.load(qo, w.kg.add(rowEl[j%2], ci((8*ks+4*(j/2))*qo.strides[3])))
		qf[j] = w.cvtTF32(w.kg.b.NewSelect(rowOK[j%2], x, f32(0)))
	}
}

// tf32PV adds P·V of 8 keys to the accumulators: pa is P's A fragment, and V's B fragment of
// output columns 8n… the words (key 2t, ev g) and (2t+1, g), at off bytes from byte vOff (row
// 2t, column g) of V's tile and a row later, rounded to tf32.
func (w *mmaAttn) tf32PV(acc []*ir.InstAlloca, pa []value.Value, vOff value.Value, off int, mma func(c []*ir.InstAlloca, a []value.Value, b0, b1 value.Value)) {
	kg, t := w.kg, w.vt
	pt := types.NewPointer(types.I32)
	pt.AddrSpace = 3
	for n := range len(acc) / 4 {
		vf := make([]value.Value, 2)
		for x := range vf {
			p := kg.b.NewGetElementPtr(t.tile.ContentType, t.tile, ci(0), kg.add(vOff, ci(off+4*(x*t.rowH+8*n))))
			p.InBounds = true
			ld := kg.b.NewLoad(types.I32, kg.b.NewBitCast(p, pt))
			ld.Align = 4
			vf[x] = ld
		}
		w.roundTF32(vf)
		mma(acc[4*n:4*n+4], pa, vf[0], vf[1])
	}
}

// storeTF32 writes row half i's outputs acc·inv, two f32 per 8 columns, at element el of the
// output (column 2t of the row) where ok (the row is below L).
func (w *mmaAttn) storeTF32(out, el value.Value, acc []*ir.InstAlloca, i int, inv, ok value.Value) {
	kg := w.kg
	b := kg.b
	v2 := types.NewVector(2, types.Float)
	xs := make([]value.Value, len(acc)/4)
	for n := range xs {
		var vec value.Value = b.NewInsertElement(constant.NewUndef(v2), b.NewFMul(b.NewLoad(types.Float, acc[4*n+2*i]), inv), ci(0))
		xs[n] = b.NewInsertElement(vec, b.NewFMul(b.NewLoad(types.Float, acc[4*n+2*i+1]), inv), ci(1))
	}
	kg.branch(ok, "store", func() {
		pt := types.NewPointer(v2)
		pt.AddrSpace = 1
		for n, x := range xs {
			st := kg.b.NewStore(x, kg.b.NewBitCast(kg.elemPtr(w.d, out, kg.add(el, ci(8*n))), pt))
			st.Align = 8
		}
	})
}
