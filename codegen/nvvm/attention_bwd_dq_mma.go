package nvvm

import (
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// codegen/ptx's dq backward on tensor cores (its attention_bwd_dq_mma.go; attnmma.FitsGradDQ:
// f16/bf16, masks none and causal, the additive bias, head dims multiples of 16 up to 128), from
// the same plan, shaped as the forward (attention_mma.go): a block of 4 warps owns attnmma.Rows
// query rows of one (batch, head), 16 per warp, whose Q and dO rows it keeps as mma A fragments
// with the rows' −LSE·log₂e and D = rowsum(dO∘O) (the thread's columns, then the lane quad's
// butterfly) and dq's f32 accumulators. K and V stream through shared memory in tiles of
// attnmma.GradDQKeys keys by cp.async (V's copy in flight while S's products run), and per tile
// a warp computes
//
//	S = Q·Kᵀ, P = 2^(S·scale·log₂e + bias·log₂e − LSE·log₂e) (0 for keys a row does not see),
//	dP = dO·Vᵀ, dS = P∘(dP − D), dq += dS·K
//
// with K and V read by ldmatrix (K again with .trans for dS·K) and dS rounded to the operands'
// dtype in registers, and dq scaled by the scale at the store. Every floating-point operation is
// codegen/ptx's in its order (each accumulator's mma.sync in the same sequence; llvm.fma.f32,
// fadd, fsub, fmul, ex2.approx.ftz.f32 as inline assembly), so dq is its bit for bit; every
// element is summed by one thread in key order (no atomics).

// gradDQMMAKernel finishes attentionBwdKernel for dq on tensor cores (out: dq's pointer).
// At symbolic sizes (work non-nil) L, S, the row tiles and the operands' offsets and outer
// strides are the run's (symattn_mma.go), as codegen/ptx's symattn_bwd_mma.go.
func (ag *attnGen) gradDQMMAKernel(operands []attnOperand, out value.Value, args []plan.Arg, work *plan.SymWork) (*ir.Func, plan.Launch, error) {
	w := ag.newMMA(operands, attnmma.GradDQKeys)
	if err := w.symbolic(); err != nil { // symattn_mma.go
		return nil, plan.Launch{}, err
	}
	w.gradDQ(out)
	return ag.kg.f, plan.Launch{Grid: [3]int{attnmma.GradDQBlocks(ag.p.Op), 1, 1}, Block: [3]int{attnmma.Threads, 1, 1}, Params: args, Work: work}, nil
}

func (w *mmaAttn) gradDQ(out value.Value) {
	kg, p := w.kg, w.p
	op := p.Op
	b := func() *ir.Block { return kg.b }
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	oOp, doOp, lseOp := w.gradOperands(w.ops)
	var bias *attnOperand
	if op.Attrs.Bool("additive", false) {
		bias = &w.ops[3]
	}
	keys := w.keys

	rb := w.rowBlock(nil)
	lane, bh, h, tq := rb.lane, rb.bh, rb.h, rb.tq
	rows := []value.Value{rb.rowA, rb.rowB}
	warpLast, blockLast := rb.warpLast, rb.blockLast

	// Q's, dO's and (for D only) O's A fragments of rows g and g+8, zero past L.
	var rowOK [2]value.Value
	for i, row := range rows {
		rowOK[i] = b().NewICmp(enum.IPredULT, row, w.dimL())
	}
	frags := func(o attnOperand, n int) [][4]value.Value {
		f := make([][4]value.Value, n/16)
		var rowEl [2]value.Value
		for i, row := range rows {
			rowEl[i] = kg.add(w.index(o, w.bIdx, h, kg.umin(row, w.dimLast())), kg.mul(tq, 2*o.strides[3]))
		}
		w.halfA(o, f, rowEl, rowOK)
		return f
	}
	qf, dof := frags(w.ops[0], p.E), frags(doOp, p.Ev)

	// Per row i (g, g+8): D = Σ dO∘O over the thread's columns, then over the lane quad; and
	// −LSE·log₂e (0 past L).
	dr := [2]value.Value{f32(0), f32(0)}
	var nl [2]value.Value
	for ks, of := range frags(oOp, p.Ev) {
		for j := range 4 {
			x, y := w.halves(dof[ks][j])
			u, v := w.halves(of[j])
			dr[j%2] = b().NewCall(fma, x, u, dr[j%2])
			dr[j%2] = b().NewCall(fma, y, v, dr[j%2])
		}
	}
	for i, row := range rows {
		for _, off := range []int{1, 2} {
			dr[i] = b().NewFAdd(dr[i], kg.shuffleXor(irg.F32, dr[i], off))
		}
		x := w.zeros(1)[0]
		kg.branch(rowOK[i], "dq_lse", func() {
			b().NewStore(b().NewFMul(w.load(lseOp, w.index(lseOp, w.bIdx, h, row)), f32(-math.Log2E)), x)
		})
		nl[i] = w.ld(x)
	}

	// Bias rows' elements at key 2t of key 0 (rows past L read row L−1).
	var biasEl [2]value.Value
	if bias != nil {
		for i, row := range rows {
			biasEl[i] = kg.add(w.index(*bias, w.bIdx, h, kg.umin(row, w.dimLast())), kg.mul(tq, 2*bias.strides[3]))
		}
	}

	kt, vt := w.newTile("ktile", w.ops[1], p.E), w.newTile("vtile", w.ops[2], p.Ev)
	// ldmatrix lane addresses: K and V as B operands of S and dP (stored [key][e], the keys the
	// product's n), and K with .trans as dS·K's B (the keys its k), as the forward's V.
	q8, r8 := kg.div(lane, 8), kg.rem(lane, 8)
	plain := func(t *mmaTile) value.Value {
		return w.shAddr(t, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.div(q8, 2), 8), r8), t.rowH), kg.mul(kg.rem(q8, 2), 8)), 2))
	}
	kN, vN := plain(kt), plain(vt)
	kT := w.shAddr(kt, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.rem(q8, 2), 8), r8), kt.rowH), kg.mul(kg.div(q8, 2), 8)), 2))

	dq := w.zeros(4 * p.E / 8)
	scale := op.Attrs.Float("scale", 1)
	c2 := scale * math.Log2E
	s := make([]*ir.InstAlloca, 4*keys/8)
	for i := range s {
		s[i] = kg.alloca(types.Float)
	}

	kg.branch(b().NewICmp(enum.IPredNE, blockLast, ci(0)), "dq", func() {
		kg.loopTo(ci(0), ci(keys), blockLast, func(t0 value.Value) {
			left := b().NewSub(w.dimS(), t0)
			w.issue(kt, t0, left)
			w.issue(vt, t0, left)
			kg.asm("cp.async.wait_group 1;", "~{memory}") // K of this tile
			kg.barrier()
			busy := b().NewICmp(enum.IPredULT, t0, warpLast) // the warp's last row sees a key of this tile
			kg.branch(busy, "dq_s", func() {
				copy(s, w.abT(qf, kN, kt.rowH, keys))
				if bias != nil {
					kLeft := b().NewSub(left, kg.mul(tq, 2))
					for j := range keys / 8 {
						for c := range 4 {
							ok := b().NewICmp(enum.IPredSGT, kLeft, ci(8*j+c%2))
							el := kg.add(kg.add(biasEl[c/2], b().NewMul(t0, ci(bias.strides[3]))), ci((8*j+c%2)*bias.strides[3]))
							f := w.widen16(b().NewSelect(ok, w.load16(*bias, b().NewSelect(ok, el, w.offOf(*bias))), constant.NewInt(types.I16, 0)))
							b().NewStore(b().NewCall(fma, w.ld(s[4*j+c]), f32(c2/math.Log2E), f), s[4*j+c])
						}
					}
				}
				for j := range keys / 8 {
					for c := range 4 {
						r := s[4*j+c]
						k := c2
						if bias != nil { // s holds score + bias
							k = math.Log2E
						}
						b().NewStore(w.ex2ftz(b().NewCall(fma, w.ld(r), f32(k), nl[c/2])), r)
					}
				}
				w.hideKeys(s, rb, t0, 0) // P = 0 for keys a row does not see
			})
			kg.asm("cp.async.wait_group 0;", "~{memory}") // V of this tile
			kg.barrier()
			kg.branch(busy, "dq_acc", func() {
				dp := w.abT(dof, vN, vt.rowH, keys)
				// dS = P∘(dP − D), as A fragments: keys 16kk… are tiles 2kk and 2kk+1.
				for j := range keys / 8 {
					for c := range 4 {
						x := dp[4*j+c]
						b().NewStore(b().NewFMul(b().NewFSub(w.ld(x), dr[c/2]), w.ld(s[4*j+c])), x)
					}
				}
				// dq += dS·K: K's x4 .trans covers keys 16kk… and columns 16nj….
				for kk := range keys / 16 {
					var af [4]value.Value
					for j := range 4 {
						c := 4*(2*kk+j/2) + 2*(j%2)
						af[j] = kg.asmRet(types.I32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", w.ld(dp[c+1]), w.ld(dp[c]))
					}
					for nj := range p.E / 16 {
						w.mma2(dq, af, ldTrans, kT, 2*(16*kk*kt.rowH+16*nj), nj)
					}
				}
			})
			kg.barrier() // every warp is done with K and V
		})
	})

	// dq·scale as rows g and g+8, pairs of columns 2t, 2t+1.
	for i, row := range rows {
		el := kg.add(kg.mul(kg.add(w.mulL(bh), kg.umin(row, w.dimLast())), p.E), kg.mul(tq, 2))
		pks := make([]value.Value, p.E/8)
		for n := range pks {
			x := b().NewFMul(w.ld(dq[4*n+2*i]), f32(scale))
			y := b().NewFMul(w.ld(dq[4*n+2*i+1]), f32(scale))
			pks[n] = kg.asmRet(types.I32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", y, x)
		}
		kg.branch(rowOK[i], "store", func() {
			for n, pk := range pks {
				st := b().NewStore(pk, w.ptrTo(attnOperand{d: w.d, ptr: out}, kg.add(el, ci(8*n)), types.I32))
				st.Align = 4
			}
		})
	}
	kg.b.NewRet(nil)
}

// halves are the f32 values of a 32-bit register's two 16-bit elements of the operands' dtype:
// the low half first.
func (w *mmaAttn) halves(x value.Value) (lo, hi value.Value) {
	b := w.kg.b
	return w.widen16(b.NewTrunc(x, types.I16)), w.widen16(b.NewTrunc(b.NewLShr(x, ci(16)), types.I16))
}
