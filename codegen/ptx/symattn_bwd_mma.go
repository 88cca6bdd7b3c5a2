package ptx

import (
	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir/sym"
)

// The tensor-core attention backward (attention_bwd_mma.go: dk and dv; attention_bwd_dq_mma.go:
// dq) at symbolic sizes, as symattn_mma.go does for the forward: L, S, the (batch, head) count
// and the operands' offsets and outer strides are registers computed from the kernel's size
// parameters, and the grid is a size expression of the plan's work: dq's the forward's,
// B·H·⌈L/64⌉, dk/dv's B·KVH·⌈S/64⌉. Rows past L and keys past S are masked as at the bound and
// never written. A static kernel keeps the bound's immediates: its PTX is unchanged.

// symbolicGrad declares a symbolic backward kernel's sizes (symbolicGrid) with its grid: the
// forward's for dq, a block per attnmma.GradKeys keys of each (batch, KV head) for dk and dv;
// nothing for a static kernel.
func (w *attnMMA) symbolicGrad(k Kernel, args *[]Arg, dq bool) (*SymWork, error) {
	if dq {
		return w.symbolic(k, args)
	}
	kvh := int64(w.p.KVH)
	work, err := w.symbolicGrid(k, args, attnmma.GradBlocks(w.p.Op), func(_, kk []sym.Expr) sym.Expr {
		return sym.Mul(sym.Scale(kk[0], kvh), sym.Div(sym.Add(kk[2], sym.Const(attnmma.GradKeys-1)), attnmma.GradKeys))
	})
	if work != nil {
		w.sym.sLast = w.b.reg(rU32)
		w.b.ins("sub.s32", w.sym.sLast, w.sym.s, "1")
	}
	return work, err
}

// clampS is key clamped to [0, S−1].
func (w *attnMMA) clampS(key string) string {
	return w.clampTo(key, w.p.S, func() string { return w.sym.sLast })
}

// keyBlock is the dk/dv block's (batch·KV head, key block) from its index, n key blocks per
// (batch, KV head) at the bound: ⌈S/GradKeys⌉ at the run's S at symbolic sizes.
func (w *attnMMA) keyBlock(cta string, n int) (bk, kb string) {
	a, b := w.a, w.b
	if w.sym == nil {
		bk = a.reg(a.div(cta, n))
		return bk, a.reg(a.rem(cta, n))
	}
	blocks := b.reg(rU32)
	b.ins("add.s32", blocks, w.sym.s, imm(attnmma.GradKeys-1))
	b.ins("div.u32", blocks, blocks, imm(attnmma.GradKeys))
	bk, kb = b.reg(rU32), b.reg(rU32)
	b.ins("div.u32", bk, cta, blocks)
	b.ins("rem.u32", kb, cta, blocks)
	return bk, kb
}

// keyRow is the output row of (batch·KV head bk, key): bk·S + key, key clamped below S.
func (w *attnMMA) keyRow(bk, key string) string {
	c := w.clampS(key)
	if w.sym == nil {
		return w.a.mad(bk, w.p.S, c)
	}
	r := w.b.reg(rU32)
	w.b.ins("mad.lo.s32", r, bk, w.sym.s, c)
	return r
}
