package nvvm

import (
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ops"
)

// codegen/ptx's dk/dv backward on tensor cores (its attention_bwd_mma.go; attnmma.FitsGradWide:
// f16/bf16, masks none and causal, head dims multiples of 16 up to 128, the additive bias up to
// 96), from the same plan: a block of 4 warps owns attnmma.GradKeys keys of one (batch entry, KV
// head), 16 per warp, whose K and V rows it keeps as mma A fragments and whose dk and dv it
// accumulates in f32. It loops over the query heads of the KV head's group in head order and over
// tiles of attnmma.GradRowTile query rows (32, or 16 over head dim 96; a causal block from the
// tile of its first key), copying each
// tile's q and do rows to shared memory by cp.async (attention_mma.go's tiles and copies) and
// staging the rows' −LSE·log₂e and D = rowsum(do∘o) (a thread per row, in column order). Per
// tile a warp computes
//
//	Sᵀ = K·Qᵀ, Pᵀ = 2^(Sᵀ·scale·log₂e − LSE·log₂e) (0 where the row does not see the key or lies
//	past L), dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − D), dK += dSᵀ·Q
//
// (with the bias, Pᵀ = 2^((Sᵀ·scale + bias)·log₂e − LSE·log₂e), the bias read per value:
// attention_bwd_bias_mma.go),
// with Pᵀ and dSᵀ rounded to the operands' dtype in registers, Q and dO read by ldmatrix (.trans
// where the tile's rows are the product's k), and dk scaled by the scale at the store. Every
// floating-point operation is codegen/ptx's in its order (each accumulator's mma.sync in the same
// sequence; llvm.fma.f32, fsub, fmul, ex2.approx.ftz.f32 as inline assembly), so dk and dv are its
// bit for bit; every element is summed by one thread in a fixed order (no atomics).

// The ldmatrix x4 instructions: plain and transposed.
const ldPlain, ldTrans = "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"

// gradMMAKernel finishes attentionBwdKernel for dk and dv on tensor cores (outs: the outputs'
// pointers by wrt, one or both).
// At symbolic sizes (work non-nil) L, S, the key blocks and the operands' offsets and outer
// strides are the run's (symattn_mma.go, symattn_bwd.go), as codegen/ptx's symattn_bwd_mma.go.
func (ag *attnGen) gradMMAKernel(operands []attnOperand, outs map[string]value.Value, args []plan.Arg, work *plan.SymWork) (*ir.Func, plan.Launch, error) {
	w := ag.newMMA(operands, attnmma.GradRowTile(ag.p.Op)) // keys: the row tile
	if err := w.symbolic(); err != nil {                   // symattn_mma.go
		return nil, plan.Launch{}, err
	}
	w.gradBody(outs)
	return ag.kg.f, plan.Launch{Grid: [3]int{attnmma.GradBlocks(ag.p.Op), 1, 1}, Block: [3]int{attnmma.Threads, 1, 1}, Params: args, Work: work}, nil
}

func (w *mmaAttn) gradBody(outs map[string]value.Value) {
	kg, p, op := w.kg, w.p, w.p.Op
	b := func() *ir.Block { return kg.b }
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	causal := op.Attrs.String("mask", "") == ops.MaskCausal
	oi, doi := ops.AttentionGradOperands(op)
	qOp, kOp, vOp, oOp, doOp, lseOp := w.ops[0], w.ops[1], w.ops[2], w.ops[oi], w.ops[doi], w.ops[len(w.ops)-1]
	grp := p.H / p.KVH
	keyBlocks := ceilDiv(p.S, attnmma.GradKeys)
	rows := w.keys

	w.tid = kg.sreg("tid.x")
	lane, warp := b().NewAnd(w.tid, ci(31)), b().NewLShr(w.tid, ci(5))
	cta := kg.sreg("ctaid.x")
	bk, kbi := w.gradKeyBlock(cta, keyBlocks) // symattn_bwd.go
	w.bIdx, w.kh = kg.div(bk, p.KVH), kg.rem(bk, p.KVH)
	g, tq := kg.div(lane, 4), kg.rem(lane, 4)
	if kbi == nil {
		kbi = kg.rem(cta, keyBlocks)
	}
	blockKey := kg.mul(kbi, attnmma.GradKeys)
	warpKey := kg.add(kg.mul(warp, 16), blockKey)
	keyA := kg.add(warpKey, g)
	keyB := kg.add(keyA, ci(8))

	// K's and V's A fragments of the warp's 16 keys (rows g and g+8), zero past S.
	frags := func(o attnOperand, n int) [][4]value.Value {
		f := make([][4]value.Value, n/16)
		var rowEl, ok [2]value.Value
		for i, key := range []value.Value{keyA, keyB} {
			ok[i] = b().NewICmp(enum.IPredULT, key, w.dimS())
			rowEl[i] = kg.add(w.index(o, w.bIdx, w.kh, kg.umin(key, w.dimSLast())), kg.mul(tq, 2*o.strides[3]))
		}
		w.halfA(o, f, rowEl, ok)
		return f
	}
	kf, vf := frags(kOp, p.E), frags(vOp, p.Ev)
	bias := w.gradBias(keyA, keyB)
	dk, dv := w.zeros(4*p.E/8), w.zeros(4*p.Ev/8)

	qt, dt := w.newTile("qtile", qOp, p.E), w.newTile("dotile", doOp, p.Ev)
	lseTile := kg.md.sharedArray(kg.name+"_lsetile", rows, types.Float, 16)
	dTile := kg.md.sharedArray(kg.name+"_dtile", rows, types.Float, 16)

	// ldmatrix lane addresses as the forward's: plain (Qᵀ and dOᵀ as B, the tile's rows the
	// product's n) and transposed (Q and dO as B, its rows the product's k).
	q8, r8 := kg.div(lane, 8), kg.rem(lane, 8)
	plain := func(t *mmaTile) value.Value {
		return w.shAddr(t, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.div(q8, 2), 8), r8), t.rowH), kg.mul(kg.rem(q8, 2), 8)), 2))
	}
	trans := func(t *mmaTile) value.Value {
		return w.shAddr(t, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.rem(q8, 2), 8), r8), t.rowH), kg.mul(kg.div(q8, 2), 8)), 2))
	}
	qN, qK, dN, dK := plain(qt), trans(qt), plain(dt), trans(dt)

	// The first row tile: a causal block's first key's (rows before it see none of its keys).
	var rowStart value.Value = ci(0)
	if causal {
		rowStart = kg.mul(kg.div(blockKey, rows), rows)
	}
	c2 := op.Attrs.Float("scale", 1) * math.Log2E

	mma2, product := w.mma2, func(af [][4]value.Value, addr value.Value, rowH int) []*ir.InstAlloca {
		return w.abT(af, addr, rowH, rows)
	}
	// aFrags are the A fragments of keys × rows 16kk…: accumulator tiles 2kk and 2kk+1, as the
	// forward's P.
	aFrags := func(x []*ir.InstAlloca) [][4]value.Value {
		f := make([][4]value.Value, rows/16)
		for kk := range f {
			for j := range 4 {
				c := 4*(2*kk+j/2) + 2*(j%2)
				f[kk][j] = kg.asmRet(types.I32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", w.ld(x[c+1]), w.ld(x[c]))
			}
		}
		return f
	}
	// accumulate adds A·B to acc, B the rows × n tile at addr (ldmatrix.trans), n-tiles of 8
	// columns.
	accumulate := func(acc []*ir.InstAlloca, af [][4]value.Value, addr value.Value, rowH, n int) {
		for kk := range af {
			for nj := range n / 16 {
				mma2(acc, af[kk], ldTrans, addr, 2*(16*kk*rowH+16*nj), nj)
			}
		}
	}

	kg.loop(ci(0), ci(1), grp, func(hj value.Value) {
		h := kg.add(kg.mul(w.kh, grp), hj)
		bias.retarget(h)
		for _, t := range []*mmaTile{qt, dt} {
			t.src0 = kg.add(w.index(t.op, w.bIdx, h, t.row0), t.col0)
		}
		kg.loopTo(rowStart, ci(rows), w.dimL(), func(r0 value.Value) {
			left := b().NewSub(w.dimL(), r0)
			w.issue(qt, r0, left)
			w.issue(dt, r0, left)
			w.gradRowStats(oOp, doOp, lseOp, h, r0, lseTile, dTile)
			kg.asm("cp.async.wait_group 0;", "~{memory}")
			kg.barrier()
			// The warp has keys below S that a row of the tile sees.
			var busy value.Value = b().NewICmp(enum.IPredULT, warpKey, w.dimS())
			if causal {
				busy = b().NewAnd(busy, b().NewICmp(enum.IPredULE, warpKey, kg.add(r0, ci(rows-1))))
			}
			kg.branch(busy, "grad", func() {
				s := product(kf, qN, qt.rowH)
				// Pᵀ, 0 where the row is past L or (causal) before the key.
				dr := make([]value.Value, rows/4) // D by (j, c)
				for j := range rows / 8 {
					for c := range 2 {
						at := kg.add(kg.mul(tq, 2), ci(8*j+c))
						nl := b().NewLoad(types.Float, w.shared(lseTile, at))
						dr[2*j+c] = b().NewLoad(types.Float, w.shared(dTile, at))
						row := kg.add(r0, at)
						for i, key := range []value.Value{keyA, keyB} {
							var ok value.Value = b().NewICmp(enum.IPredULT, row, w.dimL())
							if causal {
								ok = b().NewAnd(ok, b().NewICmp(enum.IPredUGE, row, key))
							}
							r := s[4*j+2*i+c]
							var x value.Value
							if bias != nil { // Sᵀ·scale + bias, then in base 2
								x = b().NewCall(fma, w.ld(r), f32(op.Attrs.Float("scale", 1)), bias.load(row, i, ok))
								x = b().NewCall(fma, x, f32(math.Log2E), nl)
							} else {
								x = b().NewCall(fma, w.ld(r), f32(c2), nl)
							}
							e := w.ex2ftz(x)
							b().NewStore(b().NewSelect(ok, e, f32(0)), r)
						}
					}
				}
				accumulate(dv, aFrags(s), dK, dt.rowH, p.Ev)
				dp := product(vf, dN, dt.rowH)
				for j := range rows / 8 {
					for c := range 2 {
						for i := range 2 {
							x := dp[4*j+2*i+c]
							b().NewStore(b().NewFMul(b().NewFSub(w.ld(x), dr[2*j+c]), w.ld(s[4*j+2*i+c])), x)
						}
					}
				}
				accumulate(dk, aFrags(dp), qK, qt.rowH, p.E)
			})
			kg.barrier() // every warp is done with the tile
		})
	})

	// dk·scale and dv as rows g and g+8 of the warp's keys, pairs of columns 2t, 2t+1.
	store := func(out value.Value, acc []*ir.InstAlloca, n int, scale float64) {
		for i, key := range []value.Value{keyA, keyB} {
			el := kg.add(kg.mul(kg.add(w.mulS(bk), kg.umin(key, w.dimSLast())), n), kg.mul(tq, 2))
			pks := make([]value.Value, n/8)
			for nt := range pks {
				x, y := w.ld(acc[4*nt+2*i]), w.ld(acc[4*nt+2*i+1])
				if scale != 1 {
					x, y = b().NewFMul(x, f32(scale)), b().NewFMul(y, f32(scale))
				}
				pks[nt] = kg.asmRet(types.I32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", y, x)
			}
			kg.branch(b().NewICmp(enum.IPredULT, key, w.dimS()), "store", func() {
				for nt, pk := range pks {
					st := b().NewStore(pk, w.ptrTo(attnOperand{d: w.d, ptr: out}, kg.add(el, ci(8*nt)), types.I32))
					st.Align = 4
				}
			})
		}
	}
	if out := outs["k"]; out != nil {
		store(out, dk, p.E, op.Attrs.Float("scale", 1))
	}
	if out := outs["v"]; out != nil {
		store(out, dv, p.Ev, 1)
	}
	kg.b.NewRet(nil)
}

// mma2 adds A fragment af times the B fragments of n-tiles 2nt and 2nt+1 (one ldmatrix x4, text,
// at addr+off) to the accumulator tiles 2nt and 2nt+1 of acc.
func (w *mmaAttn) mma2(acc []*ir.InstAlloca, af [4]value.Value, text string, addr value.Value, off, nt int) {
	bf := w.ldmatrix(text, addr, off)
	for x := range 2 {
		w.mma(acc[4*(2*nt+x):4*(2*nt+x)+4], af[:], bf[2*x], bf[2*x+1])
	}
}

// abT is A·Bᵀ over the n rows of the tile at addr (plain ldmatrix; rowH its padded row): n-tile
// j holds rows 8j…, thread values (A's row g, tile row 2t+c) and (g+8, 2t+c).
func (w *mmaAttn) abT(af [][4]value.Value, addr value.Value, rowH, n int) []*ir.InstAlloca {
	s := w.zeros(4 * n / 8)
	for ks := range af {
		for np := range n / 16 {
			w.mma2(s, af[ks], ldPlain, addr, 2*(16*np*rowH+16*ks), np)
		}
	}
	return s
}

// gradRowStats stores the tile's rows' −LSE·log₂e and D = rowsum(do∘o) (f32, in column order)
// in shared memory, a thread per row; 0 and 0 for rows past L.
func (w *mmaAttn) gradRowStats(oOp, doOp, lseOp attnOperand, h, r0 value.Value, lseTile, dTile *ir.Global) {
	kg, p := w.kg, w.p
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	kg.branch(kg.b.NewICmp(enum.IPredULT, w.tid, ci(w.keys)), "stats", func() {
		row := kg.add(r0, w.tid)
		nl, dsum := w.zeros(1)[0], w.zeros(1)[0]
		kg.branch(kg.b.NewICmp(enum.IPredULT, row, w.dimL()), "stats_row", func() {
			kg.b.NewStore(kg.b.NewFMul(w.load(lseOp, w.index(lseOp, w.bIdx, h, row)), f32(-math.Log2E)), nl)
			var sum value.Value = f32(0)
			for e := range p.Ev {
				x := w.load(oOp, w.index(oOp, w.bIdx, h, row, ci(e)))
				y := w.load(doOp, w.index(doOp, w.bIdx, h, row, ci(e)))
				sum = kg.b.NewCall(fma, x, y, sum)
			}
			kg.b.NewStore(sum, dsum)
		})
		kg.b.NewStore(w.ld(nl), w.shared(lseTile, w.tid))
		kg.b.NewStore(w.ld(dsum), w.shared(dTile, w.tid))
	})
}
