package nvvm

import (
	"fmt"
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// codegen/ptx's attention backward templates (its attention_bwd.go; FlashAttention-2's backward
// on CUDA cores, in f32 whatever the operands' dtype; dk and dv on tensor cores where
// attnmma.FitsGradWide holds, attention_bwd_mma.go, and dq where FitsGradDQ does,
// attention_bwd_dq_mma.go), from the same plans
// (plan.PlanAttentionOp) and with the CUDA-core forward's pieces (attention.go):
//
//   - attention_lse: the forward template with no value columns, writing each row's
//     (m + log₂ l)·ln 2 (lg2.approx.f32, inline assembly); beside an attention op's result, the
//     forward template writes it too (attnGen.lse).
//   - dq: a warp per query row streams the K and V tiles as the forward does and adds dS·k, with
//     P = 2^(s − LSE·log₂ e) and dS = P∘(dP − D), D = rowsum(do∘o): every dq element summed by
//     one thread in key order, deterministic.
//   - dk and dv: a block per (batch, KV head, plan.AttentionGradKeys keys), a warp per key, over
//     the query heads of its group and tiles of query rows staged in shared memory with their
//     LSE and D; a causal block starts at its first key's row.
//
// Every floating-point operation is codegen/ptx's in its order (llvm.fma.f32, the butterfly of
// shuffles, fsub, fmul, ex2.approx.f32), so the gradients are its bit for bit.

// attentionBwdKernel lowers a kernel of the "attention backward" template: an attention_lse or
// attention_grad op alone, or an attention op writing its rows' log-sum-exp beside its result
// (attentionKernel).
func (md *module) attentionBwdKernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	op, ok := plan.BackwardAttention(g)
	if !ok {
		return md.attentionKernel(k, t)
	}
	for _, v := range plan.Live(g) {
		switch v.Op {
		case ops.AttentionGradOp, ops.AttentionLSEOp, irg.OpInput, irg.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice":
		default:
			return nil, plan.Launch{}, fmt.Errorf("%s fused with %s is not supported", op.Op, v.Op)
		}
	}
	outs, err := plan.GradOutputs(g, op)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	if op.Attrs.String("mask", "") == ops.MaskPosition {
		return nil, plan.Launch{}, fmt.Errorf("%s: the position mask is not supported by the backward templates", op.Op)
	}
	wrt := op.Attrs.String("wrt", "")
	if op.Op == ops.AttentionGradOp {
		if !op.Attrs.Bool("lse", false) {
			return nil, plan.Launch{}, fmt.Errorf("attention_grad without its lse operand is not supported (passes add attention_lse)")
		}
		if wrt != "q" && wrt != "k" && wrt != "v" {
			return nil, plan.Launch{}, fmt.Errorf("attention_grad with respect to %s is not supported (its result is [B, H, L, S])", wrt)
		}
	}
	ev := op.Args[2].Type.Shape[3]
	if op.Op == ops.AttentionLSEOp {
		ev = 0
	}
	p := plan.PlanAttentionOp(op, ev)
	if p.E > 128 || ev > 128 {
		return nil, plan.Launch{}, fmt.Errorf("%s: head dims %d and %d, the backward templates take at most 128", op.Op, p.E, ev)
	}
	if err := symAttnRefused(k, p); err != nil { // symattn.go
		return nil, plan.Launch{}, err
	}
	keyGrid := op.Op == ops.AttentionGradOp && wrt != "q"
	args, work := symGradArgs(k, p, keyGrid, plan.Params(g)) // symattn_bwd.go
	kg := md.newKernel(k, args)
	if plan.EmptyOutputs(g) {
		// Nothing to compute: one thread, as codegen/ptx's empty kernel launches.
		kg.b.NewRet(nil)
		return kg.f, plan.Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Params: args}, nil
	}
	ag := &attnGen{kg: kg, p: p, d: op.Type.DType, threads: p.Block[0]}
	if err := ag.symbolic(k, args); err != nil {
		return nil, plan.Launch{}, err
	}
	operands := make([]attnOperand, len(op.Args))
	for i, a := range op.Args {
		if operands[i], err = ag.operandOf(a, k); err != nil {
			return nil, plan.Launch{}, err
		}
	}
	launch := plan.Launch{Grid: p.Grid, Block: p.Block, Params: args, Work: work}
	switch {
	case op.Op == ops.AttentionLSEOp:
		ag.lse = kg.output(op)
		ag.ktile = md.sharedArray(k.Name+"_ktile", p.Keys*max(1, p.E), types.Float, 16)
		ag.body(operands, nil)
	case wrt == "q" && attnmma.FitsGradDQ(op): // dq on tensor cores (attention_bwd_dq_mma.go)
		return ag.gradDQMMAKernel(operands, kg.output(op), args, work)
	case wrt == "q":
		ag.ktile = md.sharedArray(k.Name+"_ktile", p.Keys*max(1, p.E), types.Float, 16)
		ag.vtile = md.sharedArray(k.Name+"_vtile", p.Keys*max(1, p.Ev), types.Float, 16)
		ag.dqBody(operands, kg.output(op))
	default:
		ptrs := map[string]value.Value{}
		for wrt, v := range outs {
			ptrs[wrt] = kg.output(v)
		}
		if attnmma.FitsGradWide(op) { // dk and dv on tensor cores (attention_bwd_mma.go)
			return ag.gradMMAKernel(operands, ptrs, args, work)
		}
		ag.dkvBody(operands, ptrs)
		launch.Grid = [3]int{max(1, p.B*p.KVH*ceilDiv(p.S, plan.AttentionGradKeys)), 1, 1}
	}
	return kg.f, launch, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// storeLSE writes the row's log-sum-exp, (m + log₂ l)·ln 2 (m and the scores are in base 2),
// from lane 0: −inf for a row with no visible key (m = −inf, l = 0).
func (ag *attnGen) storeLSE(rw *attnRow, lane, b value.Value) {
	kg, p := ag.kg, ag.p
	kg.branch(kg.b.NewAnd(kg.b.NewICmp(enum.IPredEQ, lane, ci(0)), rw.active), "lse", func() {
		x := kg.asmRet(types.Float, "lg2.approx.f32 $0, $1;", "=f,f", kg.b.NewLoad(types.Float, rw.l))
		x = kg.b.NewFMul(kg.b.NewFAdd(x, kg.b.NewLoad(types.Float, rw.m)), f32(math.Ln2))
		idx := kg.add(ag.mulL(kg.add(kg.mul(b, p.H), rw.h)), rw.i) // at the run's L (symattn.go)
		kg.b.NewStore(x, kg.elemPtr(irg.F32, ag.lse, idx)).Align = 4
	})
}

// gradOperands are attention_grad's operands o, do and lse.
func (ag *attnGen) gradOperands(operands []attnOperand) (o, do, lse attnOperand) {
	oi, doi := ops.AttentionGradOperands(ag.p.Op)
	return operands[oi], operands[doi], operands[len(operands)-1]
}

// lanes loads this lane's elements (lane + 32c) of row (b, h, i) of an operand of n columns
// where active, 0 elsewhere.
func (ag *attnGen) lanes(o attnOperand, n int, b, h, i, lane, active value.Value) []value.Value {
	kg := ag.kg
	xs := make([]value.Value, ceilDiv(n, 32))
	for c := range xs {
		x := ag.zeros(1)[0]
		e := kg.add(lane, ci(32*c))
		kg.branch(kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, e, ci(n)), active), "lane", func() {
			kg.b.NewStore(ag.load(o, ag.index(o, b, h, i, e)), x)
		})
		xs[c] = kg.b.NewLoad(types.Float, x)
	}
	return xs
}

// warpDot is Σ xs[c]·ys[c] over the warp's lanes, in every lane (a butterfly of shuffles).
func (ag *attnGen) warpDot(xs, ys []value.Value) value.Value {
	kg := ag.kg
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	var s value.Value = f32(0)
	for c := range xs {
		s = kg.b.NewCall(fma, xs[c], ys[c], s)
	}
	for off := 16; off >= 1; off /= 2 {
		s = kg.b.NewFAdd(s, kg.shuffleXor(irg.F32, s, off))
	}
	return s
}

// prob is P = 2^(s + bias·log₂e − lse₂) for score s (base 2), lse₂ the row's log-sum-exp times
// log₂ e, adding query i's bias for key j when the op has one.
func (ag *attnGen) prob(s, lse2 value.Value, bias *attnOperand, b, h, i, j value.Value) value.Value {
	kg := ag.kg
	if bias != nil {
		fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
		s = kg.b.NewCall(fma, ag.load(*bias, ag.index(*bias, b, h, i, j)), f32(math.Log2E), s)
	}
	return kg.ex2(kg.b.NewFSub(s, lse2))
}

// storeLanes writes this lane's elements (lane + 32c) of xs, times scale, as row `row` of an
// output of dtype d and n columns, where active.
func (ag *attnGen) storeLanes(d irg.DType, out value.Value, xs []*ir.InstAlloca, scale float64, n int, row, lane, active value.Value) {
	kg := ag.kg
	for c := range xs {
		e := kg.add(lane, ci(32*c))
		kg.branch(kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, e, ci(n)), active), "out", func() {
			var x value.Value = kg.b.NewLoad(types.Float, xs[c])
			if scale != 1 {
				x = kg.b.NewFMul(x, f32(scale))
			}
			st := kg.b.NewStore(kg.toMem(d, kg.round(d, x)), kg.elemPtr(d, out, kg.add(kg.mul(row, n), e)))
			st.Align = ir.Align(d.Size())
		})
	}
}

// loads loads allocas.
func (ag *attnGen) loads(xs []*ir.InstAlloca) []value.Value {
	vs := make([]value.Value, len(xs))
	for c, x := range xs {
		vs[c] = ag.kg.b.NewLoad(types.Float, x)
	}
	return vs
}

// tileElems are this lane's elements of key (or row) j of a shared tile of n columns.
func (ag *attnGen) tileElems(tile *ir.Global, n int, j, lane value.Value) []value.Value {
	xs := make([]value.Value, ceilDiv(n, 32))
	for c := range xs {
		xs[c] = ag.tileElem(tile, n, j, lane, c)
	}
	return xs
}

// dqBody writes the dq kernel: a warp per query row folds every visible key of the K and V
// tiles into dq += dS·k.
func (ag *attnGen) dqBody(operands []attnOperand, out value.Value) {
	kg, p, op := ag.kg, ag.p, ag.p.Op
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	mask := op.Attrs.String("mask", "")
	_, bias := ag.extraOperands(operands)
	oOp, doOp, lseOp := ag.gradOperands(operands)
	tid, lane, b, h, kh, row, last, active := ag.blockRows()
	lim, blim := ag.keyLimit(mask, nil, row), ag.keyLimit(mask, nil, last)
	rw := ag.newRow(operands[0], b, h, row, lane, active) // q·scale·log₂e
	dO := ag.lanes(doOp, p.Ev, b, h, row, lane, active)
	D := ag.warpDot(dO, ag.lanes(oOp, p.Ev, b, h, row, lane, active))
	lse2 := ag.rowLSE(lseOp, b, h, row, active)
	dq := ag.zeros(len(rw.q))
	ag.tileLoop(operands, tid, ci(0), blim, ag.dimS(), b, kh, func(t0 value.Value) {
		// This row's keys in the tile: j < Keys and t0 + j < lim.
		n := kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, lim, t0), kg.umin(kg.b.NewSub(lim, t0), ci(p.Keys)), ci(0))
		kg.branch(active, "dq", func() {
			kg.loopTo(ci(0), ci(1), n, func(j value.Value) {
				key := kg.add(t0, j)
				ks, vs := ag.tileElems(ag.ktile, p.E, j, lane), ag.tileElems(ag.vtile, p.Ev, j, lane)
				pr := ag.prob(ag.warpDot(ag.loads(rw.q), ks), lse2, bias, b, h, row, key)
				ds := kg.b.NewFMul(kg.b.NewFSub(ag.warpDot(dO, vs), D), pr)
				for c := range dq {
					kg.b.NewStore(kg.b.NewCall(fma, ds, ks[c], kg.b.NewLoad(types.Float, dq[c])), dq[c])
				}
			})
		})
	})
	orow := kg.add(ag.mulL(kg.add(kg.mul(b, p.H), h)), row)
	ag.storeLanes(op.Type.DType, out, dq, op.Attrs.Float("scale", 1), p.E, orow, lane, active)
	kg.b.NewRet(nil)
}

// rowLSE is row (b, h, i)'s log-sum-exp times log₂ e where active, else 0.
func (ag *attnGen) rowLSE(lseOp attnOperand, b, h, i, active value.Value) value.Value {
	kg := ag.kg
	x := ag.zeros(1)[0]
	kg.branch(active, "rowlse", func() {
		kg.b.NewStore(kg.b.NewFMul(ag.load(lseOp, ag.index(lseOp, b, h, i)), f32(math.Log2E)), x)
	})
	return kg.b.NewLoad(types.Float, x)
}

// dkvBody writes the dk and dv kernel (outs: the outputs' pointers by wrt, one or both): a warp
// per key folds the visible query rows of every query head of its group, a tile of rows (the
// forward's key tile, for the same bytes) at a time through shared memory.
func (ag *attnGen) dkvBody(operands []attnOperand, outs map[string]value.Value) {
	kg, p, op, md := ag.kg, ag.p, ag.p.Op, ag.kg.md
	fma := md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	rows := p.Keys
	_, bias := ag.extraOperands(operands)
	oOp, doOp, lseOp := ag.gradOperands(operands)
	causal := op.Attrs.String("mask", "") == ops.MaskCausal
	qtile := md.sharedArray(kg.name+"_qtile", rows*max(1, p.E), types.Float, 16)
	dotile := md.sharedArray(kg.name+"_dotile", rows*max(1, p.Ev), types.Float, 16)
	lsetile := md.sharedArray(kg.name+"_lsetile", rows, types.Float, 16)
	dtile := md.sharedArray(kg.name+"_dtile", rows, types.Float, 16)
	tid := kg.sreg("tid.x")
	lane, warp := kg.b.NewAnd(tid, ci(31)), kg.b.NewLShr(tid, ci(5))
	cta := kg.sreg("ctaid.x")
	bk, kb := ag.keyBlock(cta) // symattn_bwd.go
	b, kh := kg.div(bk, p.KVH), kg.rem(bk, p.KVH)
	key0 := kg.mul(kb, plan.AttentionGradKeys)
	key := kg.add(key0, warp)
	active := kg.b.NewICmp(enum.IPredULT, key, ag.dimS())

	// This lane's k elements, pre-scaled by scale·log₂e (scores in base 2), v elements (dk) and
	// accumulators.
	ks := ag.lanes(operands[1], p.E, b, kh, key, lane, active)
	for c := range ks {
		ks[c] = kg.b.NewFMul(ks[c], f32(op.Attrs.Float("scale", 1)*math.Log2E))
	}
	doK, doV := outs["k"] != nil, outs["v"] != nil
	var vs []value.Value
	var dk, dv []*ir.InstAlloca
	if doK {
		vs = ag.lanes(operands[2], p.Ev, b, kh, key, lane, active)
		dk = ag.zeros(ceilDiv(p.E, 32))
	}
	if doV {
		dv = ag.zeros(ceilDiv(p.Ev, 32))
	}
	// Rows before the block's first key see none of its keys under the causal mask.
	var first value.Value = ci(0)
	if causal {
		first = key0
	}
	grp := p.H / p.KVH
	kg.loop(ci(0), ci(1), grp, func(hh value.Value) {
		h := kg.add(kg.mul(kh, grp), hh)
		kg.loopTo(first, ci(rows), ag.dimL(), func(t0 value.Value) {
			ag.loadTile(qtile, operands[0], p.E, tid, t0, ag.dimL(), b, h)
			ag.loadTile(dotile, doOp, p.Ev, tid, t0, ag.dimL(), b, h)
			ag.rowStats(lseOp, oOp, doOp, lsetile, dtile, tid, t0, b, h, doK)
			kg.barrier()
			// Fold the tile's rows [t0, min(t0+rows, L)) that see this warp's key.
			n := kg.umin(kg.b.NewSub(ag.dimL(), t0), ci(rows))
			kg.branch(active, "fold", func() {
				kg.loopTo(ci(0), ci(1), n, func(r value.Value) {
					i := kg.add(t0, r)
					fold := func() {
						qs, dos := ag.tileElems(qtile, p.E, r, lane), ag.tileElems(dotile, p.Ev, r, lane)
						lse2 := kg.b.NewLoad(types.Float, ag.shared(lsetile, r))
						pr := ag.prob(ag.warpDot(qs, ks), lse2, bias, b, h, i, key)
						for c := range dv {
							kg.b.NewStore(kg.b.NewCall(fma, pr, dos[c], kg.b.NewLoad(types.Float, dv[c])), dv[c])
						}
						if doK {
							dd := kg.b.NewLoad(types.Float, ag.shared(dtile, r))
							ds := kg.b.NewFMul(kg.b.NewFSub(ag.warpDot(dos, vs), dd), pr)
							for c := range dk {
								kg.b.NewStore(kg.b.NewCall(fma, ds, qs[c], kg.b.NewLoad(types.Float, dk[c])), dk[c])
							}
						}
					}
					if causal { // row i sees key iff key ≤ i
						kg.branch(kg.b.NewICmp(enum.IPredUGE, i, key), "causal", fold)
					} else {
						fold()
					}
				})
			})
			kg.barrier()
		})
	})
	orow := kg.add(ag.mulS(kg.add(kg.mul(b, p.KVH), kh)), key)
	if doK {
		ag.storeLanes(op.Args[1].Type.DType, outs["k"], dk, op.Attrs.Float("scale", 1), p.E, orow, lane, active)
	}
	if doV {
		ag.storeLanes(op.Args[2].Type.DType, outs["v"], dv, 1, p.Ev, orow, lane, active)
	}
	kg.b.NewRet(nil)
}

// rowStats stages the tile's rows' LSE·log₂e and (withD) D = rowsum(do∘o) in shared memory, a
// thread per row, rows past L left alone (never read).
func (ag *attnGen) rowStats(lseOp, oOp, doOp attnOperand, lsetile, dtile *ir.Global, tid, t0, b, h value.Value, withD bool) {
	kg, p := ag.kg, ag.p
	i := kg.add(t0, tid)
	in := kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, tid, ci(p.Keys)), kg.b.NewICmp(enum.IPredULT, i, ag.dimL()))
	kg.branch(in, "stats", func() {
		lse := kg.b.NewFMul(ag.load(lseOp, ag.index(lseOp, b, h, i)), f32(math.Log2E))
		kg.b.NewStore(lse, ag.shared(lsetile, tid))
		if !withD {
			return
		}
		fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
		sum := ag.zeros(1)[0]
		kg.loop(ci(0), ci(1), p.Ev, func(e value.Value) {
			x, y := ag.load(doOp, ag.index(doOp, b, h, i, e)), ag.load(oOp, ag.index(oOp, b, h, i, e))
			kg.b.NewStore(kg.b.NewCall(fma, x, y, kg.b.NewLoad(types.Float, sum)), sum)
		})
		kg.b.NewStore(kg.b.NewLoad(types.Float, sum), ag.shared(dtile, tid))
	})
}
