package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Attention at symbolic sizes on CUDA cores, as codegen/ptx's symattn.go: attention.go's template
// over a batch, a query length L and a key length S known at launch. The kernel takes each dim
// its values' sizes name as an i32 parameter (plan.Kernel.Sizes; plan.Arg.Expr), then its block
// count B·H·⌈L/warps⌉ (the work's elements), and computes from the dims, once, L, S, the row
// tiles and every operand's offset and strides (symstride.go: its buffers are contiguous at the
// run's sizes). The tile loop runs to S, the last tile's keys from S on are zeroed and never
// folded, and each size is the bound's immediate when the kernel is static (attnGen.sym nil).
// Split-KV decoding runs at symbolic sizes over a batch alone (symattn_decode.go) or a cache
// length (symattn_decode_len.go; another symbolic decode takes this template), and the tensor-core template at symbolic sizes is
// symattn_mma.go's, on these sizes.

// symAttn is a symbolic attention kernel's sizes at the run.
type symAttn struct {
	sv                    *symView
	l, lLast, s, rowTiles value.Value
	// chunks and lastChunk are the run's split-KV chunks and the last one's index over a
	// symbolic cache length (symattn_decode_len.go), else nil.
	chunks, lastChunk value.Value
}

// dimL, dimLast, dimS and dimRowTiles are L, L−1, S and the row tiles: immediates at the bound,
// values at symbolic sizes.
func (ag *attnGen) dimL() value.Value {
	if ag.sym == nil {
		return ci(ag.p.L)
	}
	return ag.sym.l
}

func (ag *attnGen) dimLast() value.Value {
	if ag.sym == nil {
		return ci(ag.p.L - 1)
	}
	return ag.sym.lLast
}

func (ag *attnGen) dimS() value.Value {
	if ag.sym == nil {
		return ci(ag.p.S)
	}
	return ag.sym.s
}

// dimS64 is S in 64 bits (a position mask's limit).
func (ag *attnGen) dimS64() value.Value {
	if ag.sym == nil {
		return constant.NewInt(types.I64, int64(ag.p.S))
	}
	return ag.kg.b.NewZExt(ag.sym.s, types.I64)
}

// mulL is x·L.
func (ag *attnGen) mulL(x value.Value) value.Value {
	return ag.mulSize(x, ag.p.L, func() value.Value { return ag.sym.l })
}

// mulSize is x·n, n a size: the bound's immediate, or at symbolic sizes the run's, run().
func (ag *attnGen) mulSize(x value.Value, n int, run func() value.Value) value.Value {
	if ag.sym == nil {
		return ag.kg.mul(x, n)
	}
	return ag.sym.sv.mul(x, run())
}

// rowTile splits block index cta into its (batch, head) and row tile.
func (ag *attnGen) rowTile(cta value.Value) (bh, rt value.Value) {
	return ag.split(cta, ag.p.RowTiles, func() value.Value { return ag.sym.rowTiles })
}

// split is (x / n, x mod n), n a count: the bound's immediate, or at symbolic sizes the run's,
// run().
func (ag *attnGen) split(x value.Value, n int, run func() value.Value) (value.Value, value.Value) {
	kg := ag.kg
	if ag.sym == nil {
		return kg.div(x, n), kg.rem(x, n)
	}
	r := run()
	return kg.b.NewUDiv(x, r), kg.b.NewURem(x, r)
}

// symAttnRefused says why attention kernel k does not run at symbolic sizes on CUDA cores, in
// codegen/ptx's words, or nil (always nil for a static kernel).
func symAttnRefused(k plan.Kernel, p plan.AttentionPlan) error {
	if !k.Symbolic {
		return nil
	}
	q, kk := plan.SymSizes(p.Op.Args[0], k.Sizes), plan.SymSizes(p.Op.Args[1], k.Sizes)
	isConst := func(e sym.Expr) bool { _, ok := e.IsConst(); return ok }
	switch {
	case k.Sizes == nil:
		return fmt.Errorf("attention over symbolic sizes needs its values' sizes")
	case splitkv.AppendedRows(p.Op) > 0:
		return fmt.Errorf("attention appending to a cache does not run at symbolic sizes yet")
	case !isConst(q[1]) || !isConst(kk[1]) || !isConst(q[3]) || !isConst(kk[3]) || !isConst(plan.SymSizes(p.Op.Args[2], k.Sizes)[3]):
		return fmt.Errorf("attention's heads and head sizes must be static; it has q %v and k %v", q, kk)
	}
	return nil
}

// symAttnArgs appends a symbolic kernel's size parameters to args: each dim its sizes name, then
// its block count B·H·⌈L/rows⌉ (rows: query rows per block); and returns its work. Nothing for a
// static kernel.
func symAttnArgs(k plan.Kernel, p plan.AttentionPlan, rows int, args []plan.Arg) ([]plan.Arg, *plan.SymWork) {
	if !k.Symbolic {
		return args, nil
	}
	r := int64(rows)
	q := plan.SymSizes(p.Op.Args[0], k.Sizes)
	return symBlockArgs(k, sym.Mul(sym.Scale(q[0], int64(p.H)), sym.Div(sym.Add(q[2], sym.Const(r-1)), r)), args)
}

// symBlockArgs appends each dim k's sizes name, then the block count blocks, to args; the work
// is blocks.
func symBlockArgs(k plan.Kernel, blocks sym.Expr, args []plan.Arg) ([]plan.Arg, *plan.SymWork) {
	args = append(args, symDimArgs(k.Sizes)...)
	args = append(args, plan.Arg{Kind: plan.ArgSize}) // the grid's, which the kernel reads from nctaid
	return args, &plan.SymWork{Vector: 1, MaxBlocks: 1<<31 - 1, Scale: 1, Tile: 1, Elements: blocks.String()}
}

// symbolic binds a symbolic kernel's dims and computes L, S and the row tiles from them.
func (ag *attnGen) symbolic(k plan.Kernel, args []plan.Arg) error {
	if !k.Symbolic {
		return nil
	}
	kg, p := ag.kg, ag.p
	sv := kg.newSymView(k, args)
	q, kk := plan.SymSizes(p.Op.Args[0], k.Sizes), plan.SymSizes(p.Op.Args[1], k.Sizes)
	for _, e := range []sym.Expr{q[2], kk[2]} {
		if err := sv.valid(e); err != nil {
			return err
		}
	}
	ag.sym = &symAttn{sv: sv, l: sv.eval(q[2]), s: sv.eval(kk[2])}
	warps := p.Block[0] / 32
	ag.sym.lLast = kg.sub(ag.sym.l, ci(1))
	ag.sym.rowTiles = kg.b.NewUDiv(kg.add(ag.sym.l, ci(warps-1)), ci(warps))
	return nil
}

// operandOf resolves an attention operand: at the bound's strides, or at symbolic sizes with its
// offset and strides as values. Its off and strides keep what tileVector needs to decide on
// vector loads: each one's content (the gcd of its coefficients, which divides it at every
// size), and 0 for an innermost stride that is not the constant 1.
func (ag *attnGen) operandOf(a *irg.Value, k plan.Kernel) (attnOperand, error) {
	kg := ag.kg
	if ag.sym == nil {
		return kg.attentionOperand(a)
	}
	base, off, st, ok := plan.SymStridedView(a, k.Sizes)
	if !ok || base.Op != irg.OpInput && base.Op != irg.OpParam {
		return attnOperand{}, fmt.Errorf("attention reads %s, want a buffer or a view of one strided at every size", a.Op)
	}
	sv := ag.sym.sv
	o := attnOperand{d: base.Type.DType, ptr: kg.ptr[base], off: int(content(off)), strides: make([]int, len(st)), symSt: make([]value.Value, len(st))}
	for d := range st {
		if a.Type.Shape[d] == 1 {
			st[d] = sym.Const(0) // broadcast, or a lone index
		}
	}
	for _, e := range append([]sym.Expr{off}, st...) {
		if err := sv.valid(e); err != nil {
			return o, err
		}
	}
	o.symOff = sv.eval(off)
	for d, e := range st {
		o.symSt[d] = sv.eval(e)
		o.strides[d] = int(content(e))
		if n, c := e.IsConst(); d == len(st)-1 && (!c || n != 1) {
			o.strides[d] = 0
		}
	}
	return o, nil
}

// content is the gcd of e's constant and coefficients.
func content(e sym.Expr) int64 {
	c, ms, _ := e.Monomials()
	g := max(c, -c)
	for _, m := range ms {
		a := max(m.Coef, -m.Coef)
		for a != 0 {
			g, a = a, g%a
		}
	}
	return g
}
