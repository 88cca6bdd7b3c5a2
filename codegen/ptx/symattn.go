package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Attention at symbolic sizes: the CUDA-core prefill template (attention.go) over a batch, a
// query length L and a key length S known at launch. The kernel takes each dim its buffers'
// sizes name as a .u32 parameter (Kernel.Sizes; Arg.Expr is the dim) and computes from them,
// once, L, S, the blocks per (batch, head) ⌈L/AttnWarps⌉ and every operand's strides and offset
// (symstride.go: its buffers are contiguous at the run's sizes). The tile loop runs to S, the
// causal limit is the row's own, so tiles past it are skipped as at the bound, and the last
// tile's keys from S on are zeroed and never folded. The grid is B·H·⌈L/AttnWarps⌉ blocks: the
// last size parameter and SymWork.Elements. A static kernel's code is unchanged: each size
// below is the bound's immediate when the writer has no symAttn.

// symAttn holds a symbolic attention kernel's sizes at the run, as registers.
type symAttn struct {
	dims                  map[string]string // each dim → its parameter's register
	l, lLast, s, rowTiles string
	keyBlocks             string // ⌈S/AttentionGradKeys⌉ for the dk/dv template (keyGrid), else ""
	chunks, lastChunk     string // split-KV decoding's chunks at the run's S and the last's index (symattn_decode_len.go)
}

// dimL, dimLast, dimS and dimRowTiles are L, L−1, S and the row tiles: immediates at the bound,
// registers at symbolic sizes.
func (w *attnWriter) dimL() string {
	if w.sym == nil {
		return uimm(w.p.L)
	}
	return w.sym.l
}

func (w *attnWriter) dimLast() string {
	if w.sym == nil {
		return uimm(w.p.L - 1)
	}
	return w.sym.lLast
}

func (w *attnWriter) dimS() string {
	if w.sym == nil {
		return uimm(w.p.S)
	}
	return w.sym.s
}

// dimS64 is S as a 64-bit operand: the immediate, or the run's S widened (a position mask's
// limit is computed in 64 bits).
func (w *attnWriter) dimS64() string {
	if w.sym == nil {
		return uimm(w.p.S)
	}
	s := w.reg("b64")
	w.ins("cvt.u64.u32", s, w.sym.s)
	return s
}

// dimKeyBlocks is the dk/dv template's key blocks per (batch, KV head), ⌈S/AttentionGradKeys⌉.
func (w *attnWriter) dimKeyBlocks() string {
	if w.sym == nil {
		return uimm(ceilDiv(w.p.S, AttentionGradKeys))
	}
	return w.sym.keyBlocks
}

func (w *attnWriter) dimRowTiles() string {
	if w.sym == nil {
		return uimm(w.p.RowTiles)
	}
	return w.sym.rowTiles
}

// symAttnRefused says why attention kernel k does not run at symbolic sizes, or nil (always nil
// for a static kernel). A position mask only adds a per-row key limit from pos[b], which both
// templates read at the run's batch through pos's strides at the run's sizes and clamp to the
// run's S; the log-sum-exp output [B, H, L] is contiguous at the run's sizes, as the result is,
// so its rows are written at b·H·L + h·L + i of the run's L and the rows past the run untouched.
func symAttnRefused(k Kernel, p AttentionPlan) error {
	if !k.Symbolic {
		return nil
	}
	q, kk := SymSizes(p.Op.Args[0], k.Sizes), SymSizes(p.Op.Args[1], k.Sizes)
	switch {
	case k.Sizes == nil:
		return fmt.Errorf("attention over symbolic sizes needs its values' sizes")
	case splitkv.AppendedRows(p.Op) > 0:
		return fmt.Errorf("attention appending to a cache runs at symbolic sizes over a batch alone (split-KV decoding: symattn_decode.go), every other size static")
	case !isConstExpr(q[1]) || !isConstExpr(kk[1]) || !isConstExpr(q[3]) || !isConstExpr(kk[3]) || !isConstExpr(SymSizes(p.Op.Args[2], k.Sizes)[3]):
		return fmt.Errorf("attention's heads and head sizes must be static; it has q %s and k %s", exprs(q), exprs(kk))
	}
	return nil
}

func isConstExpr(e sym.Expr) bool { _, ok := e.IsConst(); return ok }

func exprs(s []sym.Expr) string {
	t := make([]string, len(s))
	for i, e := range s {
		t[i] = e.String()
	}
	return fmt.Sprint(t)
}

// symbolic declares a symbolic kernel's size parameters after its buffers (each dim its sizes
// name, then its block count), loads the dims and computes L, S and the row tiles; nothing for a
// static kernel.
func (w *attnWriter) symbolic(k Kernel, params *[]string, args *[]Arg) (*SymWork, error) {
	if !k.Symbolic {
		return nil, nil
	}
	w.sym = &symAttn{dims: map[string]string{}}
	param := func(expr string) string {
		p := fmt.Sprintf("%s_param_%d", k.Name, len(*args))
		*params = append(*params, "\t.param .u32 "+p)
		*args = append(*args, Arg{Kind: ArgSize, Expr: expr})
		return p
	}
	for _, n := range symDimNames(k.Sizes) {
		r := w.reg("b32")
		w.ins("ld.param.u32", r, "["+param(n)+"]")
		w.sym.dims[n] = r
	}
	q, kk := SymSizes(w.p.Op.Args[0], k.Sizes), SymSizes(w.p.Op.Args[1], k.Sizes)
	var err error
	if w.sym.l, err = w.eval(q[2]); err != nil {
		return nil, err
	}
	if w.sym.s, err = w.eval(kk[2]); err != nil {
		return nil, err
	}
	w.sym.lLast, w.sym.rowTiles = w.reg("b32"), w.reg("b32")
	w.ins("sub.s32", w.sym.lLast, w.sym.l, "1")
	w.ins("add.s32", w.sym.rowTiles, w.sym.l, uimm(attnWarps-1))
	w.ins("div.u32", w.sym.rowTiles, w.sym.rowTiles, uimm(attnWarps))
	blocks := sym.Mul(sym.Scale(q[0], int64(w.p.H)), sym.Div(sym.Add(q[2], sym.Const(attnWarps-1)), attnWarps))
	if w.keyGrid {
		w.sym.keyBlocks = w.reg("b32")
		w.ins("add.s32", w.sym.keyBlocks, w.sym.s, uimm(AttentionGradKeys-1))
		w.ins("div.u32", w.sym.keyBlocks, w.sym.keyBlocks, uimm(AttentionGradKeys))
		blocks = sym.Mul(sym.Scale(q[0], int64(w.p.KVH)), sym.Div(sym.Add(kk[2], sym.Const(AttentionGradKeys-1)), AttentionGradKeys))
	}
	param(blocks.String()) // the grid's, which the kernel reads from %nctaid
	(*args)[len(*args)-1].Expr = ""
	return &SymWork{Vector: 1, MaxBlocks: 1<<31 - 1, Scale: 1, Tile: 1, Elements: blocks.String()}, nil
}

// eval emits e at the run's sizes (symEval).
func (w *attnWriter) eval(e sym.Expr) (string, error) {
	return symEval(func() string { return w.reg("b32") }, w.ins, w.sym.dims, e)
}

// operandOf resolves an attention operand: at the bound's strides, or at symbolic sizes with its
// offset and strides in registers. Its strides field keeps what tileVector needs to decide on
// vector loads: each stride's content (the gcd of its coefficients, which divides it at every
// size), and 0 for an innermost stride that is not the constant 1.
func (w *attnWriter) operandOf(v *ir.Value, k Kernel) (attnOperand, error) {
	if w.sym == nil {
		return attentionOperand(v, w.ptr)
	}
	return symOperand(v, k.Sizes, w.ptr, w.eval)
}

// symOperand resolves an attention operand at symbolic sizes (operandOf), eval emitting a size.
func symOperand(v *ir.Value, sizes map[*ir.Value][]sym.Expr, ptr map[*ir.Value]string, eval func(sym.Expr) (string, error)) (attnOperand, error) {
	base, off, st, ok := symStridedView(v, sizes)
	if !ok || base.Op != ir.OpInput && base.Op != ir.OpParam {
		return attnOperand{}, fmt.Errorf("attention reads %s, want a buffer or a view of one strided at every size", v.Op)
	}
	o := attnOperand{ptr: ptr[base], strides: make([]int, len(st)), symSt: make([]string, len(st))}
	var err error
	if o.symOff, err = eval(off); err != nil {
		return o, err
	}
	o.off = plan.Align(off)
	for d, e := range st {
		if v.Type.Shape[d] == 1 {
			e = sym.Const(0) // broadcast, or a lone index
		}
		if o.symSt[d], err = eval(e); err != nil {
			return o, err
		}
		o.strides[d] = plan.Align(e)
		if n, c := e.IsConst(); d == len(st)-1 && (!c || n != 1) {
			o.strides[d] = 0
		}
	}
	return o, nil
}

// symIndex is index for an operand at symbolic sizes: symOff + Σ idx[d]·symSt[d].
func (w *attnWriter) symIndex(o attnOperand, idx []string) string {
	r := w.reg("b32")
	w.ins("mov.u32", r, o.symOff)
	for d, x := range idx {
		if x != "" && o.symSt[d] != "0" {
			w.ins("mad.lo.s32", r, x, o.symSt[d], r)
		}
	}
	return r
}
