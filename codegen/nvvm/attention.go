package nvvm

import (
	"fmt"
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// codegen/ptx's CUDA-core attention template (its attention.go), from the same plan
// (plan.PlanAttention: grid, block, key tile): a warp per query row, online softmax over K and V
// tiles in shared memory, scores in base 2. Every floating-point operation is the one
// codegen/ptx executes, in its order: the scaled q (fmul), q·k by llvm.fma.f32 then the
// butterfly of shuffles (fadd), the bias by an fma with log2 e, max.f32 (llvm.maxnum),
// ex2.approx.f32 (inline assembly, as PTX spells it), the running sum and accumulators by fmul
// and llvm.fma.f32, the output by a correctly rounded fdiv; libNVVM runs with -fma=0, so nothing
// else contracts, and the output is bit for bit codegen/ptx's. The tiles load 16 bytes per
// thread at a time where the layout allows, else one element, as codegen/ptx's. Split-KV decoding (splitkv.Of) is
// attention_decode.go's, from the same pieces; f16/bf16 prefill (attnmma.Fits) is
// attention_mma.go's, on tensor cores.

// attnOperand is an operand of the attention op as a buffer, an offset and a stride per dim (0
// for dims of size 1: broadcasts and lone indices).
type attnOperand struct {
	d       irg.DType
	ptr     value.Value
	off     int
	strides []int
	app     *attnAppend // an appended cache's update (attention_append.go), else nil
	// symOff and symSt are the offset and strides at symbolic sizes (symattn.go), else nil.
	symOff value.Value
	symSt  []value.Value
}

// attnGen builds one attention kernel.
type attnGen struct {
	kg           *kgen
	p            plan.AttentionPlan
	d            irg.DType
	ktile, vtile *ir.Global
	threads      int         // the block's threads, which load the tiles
	lse          value.Value // the rows' log-sum-exp output (attention_lse beside the result), or nil
	sym          *symAttn    // the run's sizes of a symbolic kernel (symattn.go), else nil
}

// attentionKernel lowers a kernel whose only computation is one attention op.
func (md *module) attentionKernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	p, ok := plan.PlanAttention(g)
	if !ok {
		return nil, plan.Launch{}, fmt.Errorf("the kernel has no attention op")
	}
	for _, v := range plan.Live(g) {
		switch v.Op {
		case ops.AttentionOp, ops.AttentionLSEOp, irg.OpInput, irg.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice", ops.UpdateSliceOp:
		default:
			return nil, plan.Launch{}, fmt.Errorf("attention fused with %s is not supported", v.Op)
		}
	}
	// lse is the rows' log-sum-exp, written beside the result (attention_bwd.go).
	var lse *irg.Value
	if splitkv.AppendedRows(p.Op) == 0 { // an appending kernel also writes the caches (appendOperands)
		var err error
		if lse, err = plan.ForwardLSE(g, p.Op); err != nil {
			return nil, plan.Launch{}, err
		}
	}
	// Few query rows, a long cache: flash-decoding (attention_decode.go); at symbolic sizes over a
	// batch alone, batch its expression (symattn_decode.go), else the CUDA-core template.
	// Over a symbolic cache length, its plan (symattn_decode_len.go).
	sp, batch, decode := symDecodePlan(k, p)
	lenSp, lenBatch, length, decodeLength := symDecodeLengthPlan(k, p)
	if !decode && decodeLength {
		sp, decode = lenSp, true
	}
	if err := symAttnRefused(k, p); err != nil && !decode { // symattn.go
		return nil, plan.Launch{}, err
	}
	args := plan.Params(g)
	if decodeLength {
		args = append(args, symDimArgs(k.Sizes)...)
	}
	if decode && sp.Splits > 1 {
		args = append(args, plan.Arg{Kind: plan.ArgScratch, Bytes: sp.ScratchBytes()})
	}
	var work *plan.SymWork
	if decodeLength {
		args, work = symDecodeLengthArgs(sp, lenBatch, length, args)
	} else if batch != "" {
		args, work = symDecodeArgs(batch, args)
	} else if !decode {
		rows := p.Block[0] / 32 // query rows per block: a warp's each, or 64 on tensor cores
		if attnmma.Takes(p.Op, t.TF32) {
			rows = attnmma.Rows
		}
		args, work = symAttnArgs(k, p, rows, args)
	}
	kg := md.newKernel(k, args)
	if plan.EmptyOutputs(g) {
		// Nothing to compute: one thread, as codegen/ptx's empty kernel launches.
		kg.b.NewRet(nil)
		return kg.f, plan.Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Params: args}, nil
	}
	ag := &attnGen{kg: kg, p: p, d: p.Op.Type.DType, threads: p.Block[0]}
	var err error
	switch {
	case decodeLength:
		err = ag.symDecodeLength(k, sp, args)
	case !decode:
		err = ag.symbolic(k, args)
	}
	if err != nil {
		return nil, plan.Launch{}, err
	}
	operands := make([]attnOperand, len(p.Op.Args))
	for i, a := range p.Op.Args {
		if _, ok := splitkv.Appended(p.Op, i); ok {
			continue // appendOperands
		}
		o, err := ag.operandOf(a, k)
		if err != nil {
			return nil, plan.Launch{}, err
		}
		operands[i] = o
	}
	if err := ag.appendOperands(k, operands); err != nil {
		return nil, plan.Launch{}, err
	}
	if lse != nil {
		ag.lse = kg.output(lse)
	}
	if attnmma.Takes(p.Op, t.TF32) { // f16/bf16 (f32 under tf32) prefill on tensor cores (attention_mma.go), the LSE included
		return ag.mmaKernel(operands, args, work)
	}
	ag.ktile = md.sharedArray(k.Name+"_ktile", p.Keys*max(1, p.E), types.Float, 16)
	ag.vtile = md.sharedArray(k.Name+"_vtile", p.Keys*max(1, p.Ev), types.Float, 16)
	if decode { // few query rows, a long cache: flash-decoding (attention_decode.go)
		return ag.decodeKernel(sp, operands, args, work)
	}
	// No maxntidx annotation (codegen/ptx's .maxntid): with it CUDA 11.8's ptxas holds the
	// sm_90 kernel of a 33-wide head to 32 registers and spills.
	ag.body(operands, kg.output(p.Op))
	return kg.f, plan.Launch{Grid: p.Grid, Block: p.Block, Params: args, Work: work}, nil
}

// attentionOperand resolves operand a of the attention op to a kernel buffer and its strides.
func (kg *kgen) attentionOperand(a *irg.Value) (attnOperand, error) {
	base, off, st, ok := ops.StridedView(a)
	if !ok || base.Op != irg.OpInput && base.Op != irg.OpParam {
		return attnOperand{}, fmt.Errorf("attention reads %s, want a buffer or a strided view of one", a.Op)
	}
	for d, n := range a.Type.Shape {
		if n == 1 {
			st[d] = 0
		}
	}
	return attnOperand{d: base.Type.DType, ptr: kg.ptr[base], off: off, strides: st}, nil
}

// index is o's element off + Σ idx[d]·strides[d] (nil idx entries are index 0).
func (ag *attnGen) index(o attnOperand, idx ...value.Value) value.Value {
	kg := ag.kg
	if o.symSt != nil {
		r := o.symOff
		for d, x := range idx {
			if x != nil {
				r = kg.add(r, ag.sym.sv.mul(x, o.symSt[d]))
			}
		}
		return r
	}
	var r value.Value = ci(o.off)
	for d, x := range idx {
		if x != nil && o.strides[d] != 0 {
			r = kg.add(r, kg.mul(x, o.strides[d]))
		}
	}
	return r
}

// load reads element lin of operand o as f32 (positions: their own integer type).
func (ag *attnGen) load(o attnOperand, lin value.Value) value.Value {
	ld := ag.kg.b.NewLoad(memType(o.d), ag.kg.elemPtr(o.d, o.ptr, lin))
	ld.Align = ir.Align(o.d.Size())
	return ag.kg.fromMem(o.d, ld)
}

func f32(f float64) constant.Constant { return constant.NewFloat(types.Float, float64(float32(f))) }

// shared is a pointer to float element i of a shared tile.
func (ag *attnGen) shared(tile *ir.Global, i value.Value) value.Value {
	p := ag.kg.b.NewGetElementPtr(tile.ContentType, tile, ci(0), i)
	p.InBounds = true
	return p
}

// body writes the kernel: operands q, k, v[, pos][, bias] and the output at out.
func (ag *attnGen) body(operands []attnOperand, out value.Value) {
	kg, p := ag.kg, ag.p
	mask := p.Op.Attrs.String("mask", "")
	pos, bias := ag.extraOperands(operands)
	tid, lane, bi, h, kh, row, last, active := ag.blockRows()

	posv := ag.position(pos, bi)
	lim, blim := ag.keyLimit(mask, posv, row), ag.keyLimit(mask, posv, last)

	rw := ag.newRow(operands[0], bi, h, row, lane, active)
	rw.lim = lim
	// The tiles of keys below the block's limit: load, barrier, fold, barrier.
	ag.tileLoop(operands, tid, ci(0), blim, ag.dimS(), bi, kh, func(t0 value.Value) {
		ag.foldTile(rw, t0, lane, bi, bias)
	})
	ag.finishRow(rw, lane, bi, out, rw.acc, rw.l)
	if ag.lse != nil {
		ag.storeLSE(rw, lane, bi)
	}
	kg.b.NewRet(nil)
}

// blockRows starts a block of the row templates: the thread's index and lane, the block's
// (batch, head) and KV head, this warp's query row, the block's last row and whether this warp's
// row exists.
func (ag *attnGen) blockRows() (tid, lane, b, h, kh, row, last, active value.Value) {
	kg, p := ag.kg, ag.p
	tid = kg.sreg("tid.x")
	lane, warp := kg.b.NewAnd(tid, ci(31)), kg.b.NewLShr(tid, ci(5))
	cta := kg.sreg("ctaid.x")
	bh, rt := ag.rowTile(cta)
	b, h = kg.div(bh, p.H), kg.rem(bh, p.H)
	kh = kg.div(h, p.H/p.KVH) // the KV head within the batch entry
	warps := p.Block[0] / 32
	row0 := kg.mul(rt, warps)
	row = kg.add(row0, warp)
	last = kg.umin(kg.add(row0, ci(warps-1)), ag.dimLast())
	active = kg.b.NewICmp(enum.IPredULT, row, ag.dimL())
	return tid, lane, b, h, kh, row, last, active
}

// attnRow is a query row a warp computes, in both attention templates: its index in the block
// (split-KV), head and query index, the keys it sees (< lim), whether the warp has it (active),
// this lane's scaled q elements and the row's online-softmax state.
type attnRow struct {
	r, h, i, lim, active value.Value
	q, acc               []*ir.InstAlloca
	m, l                 *ir.InstAlloca
}

// extraOperands returns the attention op's optional operands: pos (nil without a position
// mask) and the bias (nil unless additive).
func (ag *attnGen) extraOperands(operands []attnOperand) (pos, bias *attnOperand) {
	next := 3
	if ag.p.Op.Attrs.String("mask", "") == ops.MaskPosition {
		pos = &operands[next]
		next++
	}
	if ag.p.Op.Attrs.Bool("additive", false) {
		bias = &operands[next]
	}
	return pos, bias
}

// position is pos[b] as i64 (nil without a position operand).
func (ag *attnGen) position(pos *attnOperand, b value.Value) value.Value {
	if pos == nil {
		return nil
	}
	posv := ag.load(*pos, ag.index(*pos, b))
	switch pos.d {
	case irg.I64:
	case irg.U8:
		posv = ag.kg.b.NewZExt(posv, types.I64)
	default: // i32, i8: sign-extended
		posv = ag.kg.b.NewSExt(posv, types.I64)
	}
	return posv
}

// newRow loads this lane's q elements of query (b, h, i), scaled by scale·log2 e, where active,
// and starts the row's online softmax.
func (ag *attnGen) newRow(qOp attnOperand, b, h, i, lane, active value.Value) *attnRow {
	kg, p := ag.kg, ag.p
	rw := &attnRow{h: h, i: i, active: active}
	c2 := f32(p.Op.Attrs.Float("scale", 1) * math.Log2E)
	rw.q = make([]*ir.InstAlloca, (p.E+31)/32)
	for c := range rw.q {
		rw.q[c] = kg.alloca(types.Float)
		kg.b.NewStore(f32(0), rw.q[c])
		e := kg.add(lane, ci(32*c))
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, e, ci(p.E)), active)
		kg.branch(ok, "q", func() {
			x := ag.load(qOp, ag.index(qOp, b, h, i, e))
			kg.b.NewStore(kg.b.NewFMul(x, c2), rw.q[c])
		})
	}
	rw.acc = ag.zeros((p.Ev + 31) / 32)
	rw.m, rw.l = kg.alloca(types.Float), kg.alloca(types.Float)
	kg.b.NewStore(f32(math.Inf(-1)), rw.m)
	kg.b.NewStore(f32(0), rw.l)
	return rw
}

// zeros is n f32 slots holding 0.
func (ag *attnGen) zeros(n int) []*ir.InstAlloca {
	xs := make([]*ir.InstAlloca, n)
	for c := range xs {
		xs[c] = ag.kg.alloca(types.Float)
		ag.kg.b.NewStore(f32(0), xs[c])
	}
	return xs
}

// tileLoop loops over the tiles of keys [from, end): the block's threads load each tile of K
// and V of KV head (b, kh) into shared memory, zero from key bound on, and fold(t0) folds the
// tile whose first key is t0, between two barriers.
func (ag *attnGen) tileLoop(operands []attnOperand, tid, from, end, bound, b, kh value.Value, fold func(t0 value.Value)) {
	kg, p := ag.kg, ag.p
	kg.loopTo(from, ci(p.Keys), end, func(t0 value.Value) {
		ag.loadTile(ag.ktile, operands[1], p.E, tid, t0, bound, b, kh)
		ag.loadTile(ag.vtile, operands[2], p.Ev, tid, t0, bound, b, kh)
		kg.barrier()
		fold(t0)
		kg.barrier()
	})
}

// foldTile folds the keys of the tile at t0 below the row's limit into its online softmax
// (the warp whose row it is).
func (ag *attnGen) foldTile(rw *attnRow, t0, lane, b value.Value, bias *attnOperand) {
	kg, p := ag.kg, ag.p
	// This row's keys in the tile: j < Keys and t0 + j < lim.
	n := kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, rw.lim, t0), kg.umin(kg.b.NewSub(rw.lim, t0), ci(p.Keys)), ci(0))
	kg.branch(rw.active, "fold", func() {
		kg.loopTo(ci(0), ci(1), n, func(j value.Value) {
			ag.foldKey(rw.q, rw.acc, rw.m, rw.l, j, kg.add(t0, j), lane, b, rw.h, rw.i, bias)
		})
	})
}

// finishRow writes the row's outputs acc / l (a row with no visible key is 0/0 = NaN, as the
// reference).
func (ag *attnGen) finishRow(rw *attnRow, lane, b, out value.Value, acc []*ir.InstAlloca, l *ir.InstAlloca) {
	kg, p := ag.kg, ag.p
	kg.branch(rw.active, "out", func() {
		orow := kg.add(ag.mulL(kg.add(kg.mul(b, p.H), rw.h)), rw.i)
		for c := range acc {
			e := kg.add(lane, ci(32*c))
			kg.branch(kg.b.NewICmp(enum.IPredULT, e, ci(p.Ev)), "o", func() {
				o := kg.b.NewFDiv(kg.b.NewLoad(types.Float, acc[c]), kg.b.NewLoad(types.Float, l))
				lin := kg.add(kg.mul(orow, p.Ev), e)
				st := kg.b.NewStore(kg.toMem(ag.d, kg.round(ag.d, o)), kg.elemPtr(ag.d, out, lin))
				st.Align = ir.Align(ag.d.Size())
			})
		}
	})
}

// umin is the unsigned minimum of x and y.
func (kg *kgen) umin(x, y value.Value) value.Value {
	if nx, ok := num(x); ok {
		if ny, ok := num(y); ok && nx >= 0 && ny >= 0 {
			return ci(min(nx, ny))
		}
	}
	return kg.b.NewSelect(kg.b.NewICmp(enum.IPredULT, x, y), x, y)
}

// keyLimit is the keys query index i sees, j < limit: S, i+1 (causal) or pos+i+1 (posv, 64
// bits, clamped to [0, S]: positions are untrusted data), then at most S.
func (ag *attnGen) keyLimit(mask string, posv, i value.Value) value.Value {
	kg, S := ag.kg, ag.dimS()
	var lim value.Value
	switch mask {
	case ops.MaskCausal:
		lim = kg.add(i, ci(1))
	case ops.MaskPosition:
		b := kg.b
		t := b.NewAdd(b.NewAdd(posv, b.NewZExt(i, types.I64)), constant.NewInt(types.I64, 1))
		zero, s := constant.NewInt(types.I64, 0), ag.dimS64()
		t1 := b.NewSelect(b.NewICmp(enum.IPredSLT, t, zero), zero, t)
		t2 := b.NewSelect(b.NewICmp(enum.IPredSGT, t1, s), s, t1)
		lim = b.NewTrunc(t2, types.I32)
	default:
		lim = S
	}
	return kg.umin(lim, S)
}

// loadTile stores keys [t0, t0+Keys) of the (b, kh) rows of a K or V operand of n columns in
// a shared tile as f32, zero from key kend on; the block's threads take group i, i+T, ... of v
// elements: 16 bytes at once where the operand's layout allows (plan.AttentionTileVector),
// else one element.
func (ag *attnGen) loadTile(tile *ir.Global, o attnOperand, n int, tid, t0, kend, b, kh value.Value) {
	if n == 0 {
		return
	}
	kg := ag.kg
	v := tileVector(o, n)
	kg.loop(tid, ci(ag.threads), ag.p.Keys*n/v, func(i value.Value) {
		j, e := kg.div(i, n/v), kg.mul(kg.rem(i, n/v), v)
		key := kg.add(t0, j)
		xs := make([]*ir.InstAlloca, v)
		for c := range xs {
			xs[c] = kg.alloca(types.Float)
			kg.b.NewStore(f32(0), xs[c])
		}
		kg.branch(kg.b.NewICmp(enum.IPredULT, key, kend), "kv", func() {
			if o.app != nil { // the step's keys from its rows (attention_append.go)
				ag.loadAppendedKey(o, v, b, kh, key, e, xs)
				return
			}
			ag.loadKey(o, v, b, kh, key, e, xs)
		})
		base := kg.mul(i, v)
		if v == 1 {
			kg.b.NewStore(kg.b.NewLoad(types.Float, xs[0]), ag.shared(tile, base))
			return
		}
		v4 := types.NewVector(4, types.Float)
		pt := types.NewPointer(v4)
		pt.AddrSpace = 3
		for c := 0; c < v; c += 4 {
			var vec value.Value = constant.NewUndef(v4)
			for l := range 4 {
				vec = kg.b.NewInsertElement(vec, kg.b.NewLoad(types.Float, xs[c+l]), ci(l))
			}
			st := kg.b.NewStore(vec, kg.b.NewBitCast(ag.shared(tile, kg.add(base, ci(c))), pt))
			st.Align = 16
		}
	})
}

// loadKey loads v elements of key key, column e, of the (b, kh) rows of operand o into xs.
func (ag *attnGen) loadKey(o attnOperand, v int, b, kh, key, e value.Value, xs []*ir.InstAlloca) {
	lin := ag.index(o, b, kh, key, e)
	if v == 1 {
		ag.kg.b.NewStore(ag.load(o, lin), xs[0])
		return
	}
	for c, x := range ag.loadVector(o, lin) {
		ag.kg.b.NewStore(x, xs[c])
	}
}

// loadVector reads the 16 bytes at element lin of operand o (aligned) as four 32-bit words and
// returns their elements as f32: bf16 is an f32's top half, f16 widens exactly.
func (ag *attnGen) loadVector(o attnOperand, lin value.Value) []value.Value {
	b := ag.kg.b
	w4 := types.NewVector(4, types.I32)
	pt := types.NewPointer(w4)
	pt.AddrSpace = 1
	ld := b.NewLoad(w4, b.NewBitCast(ag.kg.elemPtr(o.d, o.ptr, lin), pt))
	ld.Align = 16
	var xs []value.Value
	for c := range 4 {
		w := b.NewExtractElement(ld, ci(c))
		switch o.d {
		case irg.BF16:
			xs = append(xs, b.NewBitCast(b.NewShl(w, ci(16)), types.Float),
				b.NewBitCast(b.NewAnd(w, constant.NewInt(types.I32, -0x10000)), types.Float))
		case irg.F16:
			half := func(x value.Value) value.Value {
				return b.NewFPExt(b.NewBitCast(b.NewTrunc(x, types.I16), types.Half), types.Float)
			}
			xs = append(xs, half(w), half(b.NewLShr(w, ci(16))))
		default:
			xs = append(xs, b.NewBitCast(w, types.Float))
		}
	}
	return xs
}

// tileElem is this lane's c-th element (lane + 32c) of key j's row of a shared tile of n
// columns, 0 past the row's end.
func (ag *attnGen) tileElem(tile *ir.Global, n int, j, lane value.Value, c int) value.Value {
	kg := ag.kg
	e := kg.add(lane, ci(32*c))
	x := kg.alloca(types.Float)
	kg.b.NewStore(f32(0), x)
	kg.branch(kg.b.NewICmp(enum.IPredULT, e, ci(n)), "t", func() {
		kg.b.NewStore(kg.b.NewLoad(types.Float, ag.shared(tile, kg.add(kg.mul(j, n), e))), x)
	})
	return kg.b.NewLoad(types.Float, x)
}

// foldKey folds key (the tile's j-th) into the row's online softmax, in codegen/ptx's order.
func (ag *attnGen) foldKey(q, acc []*ir.InstAlloca, m, l *ir.InstAlloca, j, key, lane, b, h, row value.Value, bias *attnOperand) {
	kg, p := ag.kg, ag.p
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	var s value.Value = f32(0)
	for c := range q {
		s = kg.b.NewCall(fma, kg.b.NewLoad(types.Float, q[c]), ag.tileElem(ag.ktile, p.E, j, lane, c), s)
	}
	for off := 16; off >= 1; off /= 2 {
		s = kg.b.NewFAdd(s, kg.shuffleXor(irg.F32, s, off))
	}
	if bias != nil {
		x := ag.load(*bias, ag.index(*bias, b, h, row, key))
		s = kg.b.NewCall(fma, x, f32(math.Log2E), s)
	}
	// m' = max(m, s); base = m' unless it is −inf (nothing seen yet).
	mo := kg.b.NewLoad(types.Float, m)
	mn := kg.call("llvm.maxnum.f32", types.Float, mo, s)
	base := kg.b.NewSelect(kg.b.NewFCmp(enum.FPredOEQ, mn, f32(math.Inf(-1))), f32(0), mn)
	corr := kg.ex2(kg.b.NewFSub(mo, base))
	pr := kg.ex2(kg.b.NewFSub(s, base))
	kg.b.NewStore(kg.b.NewCall(fma, kg.b.NewLoad(types.Float, l), corr, pr), l)
	kg.b.NewStore(mn, m)
	for c := range acc {
		v := ag.tileElem(ag.vtile, p.Ev, j, lane, c)
		a := kg.b.NewFMul(kg.b.NewLoad(types.Float, acc[c]), corr)
		kg.b.NewStore(kg.b.NewCall(fma, pr, v, a), acc[c])
	}
}

// ex2 is ex2.approx.f32 of x, as PTX spells it (inline assembly).
func (kg *kgen) ex2(x value.Value) value.Value {
	return kg.asmRet(types.Float, "ex2.approx.f32 $0, $1;", "=f,f", x)
}
