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
	irg "github.com/gcomp/gcomp/ir"
)

// codegen/ptx's tensor-core attention template (its attention_mma.go; FlashAttention-2's
// forward on mma.sync) for f16 and bf16, from the same plan (package attnmma: 64 query rows of
// one (batch, head) per block of 4 warps, 64-key K and V tiles). A warp keeps its Q rows as mma
// A fragments for the whole kernel; K and V stream through shared memory (rows padded by 16
// bytes) by cp.async, V of tile j in flight while S = Q·Kᵀ of tile j runs and K of tile j+1
// while O += P·V of tile j runs; the probabilities are rounded to the operands' dtype in the S
// accumulators' layout, which is P's A fragments'. Every floating-point operation is
// codegen/ptx's in its order (llvm.maxnum.f32 for max.f32, llvm.fma.f32, fmul, fadd; each mma
// accumulator takes its mma.sync in the same order), so the output is its bit for bit.
// libNVVM 11.8 has no intrinsic for mma.sync, ldmatrix, cp.async, the f16x2/bf16x2 packing
// cvt, ex2.approx.ftz or rcp.approx: each is one instruction of inline assembly, as mma.go's.

// mmaAttn builds one tensor-core attention kernel.
type mmaAttn struct {
	*attnGen
	ops      []attnOperand
	tid      value.Value
	half     string // "f16" or "bf16"
	mmaText  string
	shBase   map[*ir.Global]value.Value // 32-bit shared address of each tile
	kt, vt   *mmaTile
	bIdx, kh value.Value
	eb, keys int     // operand bytes (2, or 4 for f32 on tf32 tensor cores) and keys per K/V tile
	mmaSym   *symMMA // a symbolic kernel's sizes (symattn_mma.go), else nil
}

// mmaTile is K's or V's shared tile and this thread's copies into it: chunks of chunk elements
// (8: 16-byte cp.async, 2: 4-byte cp.async, 1: a 16-bit load and store) at column col0 of rows
// row0, row0+rpp, …; threads past rpp rows of chunks idle.
type mmaTile struct {
	op         attnOperand
	n, rowH    int
	chunk, rpp int
	tile       *ir.Global
	row0       value.Value
	col0       value.Value
	src0       value.Value // element of (row0, col0) of key 0
	dst        value.Value // byte offset of (row0, col0) in the tile
}

// mmaKernel finishes attentionKernel for the tensor-core template.
func (ag *attnGen) mmaKernel(operands []attnOperand, args []plan.Arg, work *plan.SymWork) (*ir.Func, plan.Launch, error) {
	kg := ag.kg
	w := ag.newMMA(operands, attnmma.Keys)
	if err := w.symbolic(); err != nil { // symattn_mma.go
		return nil, plan.Launch{}, err
	}
	if ag.d == irg.F32 { // f32 on tf32 tensor cores (attention_tf32.go)
		w.eb, w.keys, w.mmaText = 4, attnmma.KeysTF32, tf32MMAText
	}
	// No maxntidx annotation (codegen/ptx's .maxntid 128): with it ptxas 11.8 held a causal
	// kernel with a bias of libNVVM's to 72 registers on sm_90 and spilled 12 bytes (80 without).
	w.body(kg.output(ag.p.Op))
	return kg.f, plan.Launch{Grid: [3]int{attnmma.Blocks(ag.p.Op), 1, 1}, Block: [3]int{attnmma.Threads, 1, 1}, Params: args, Work: work}, nil
}

// newMMA starts a tensor-core kernel over operands of the 16-bit dtype ag.d (m16n8k16) whose K/V
// (or q/do) tiles hold keys rows.
func (ag *attnGen) newMMA(operands []attnOperand, keys int) *mmaAttn {
	half := "f16"
	if ag.d == irg.BF16 {
		half = "bf16"
	}
	return &mmaAttn{attnGen: ag, ops: operands, half: half, shBase: map[*ir.Global]value.Value{}, eb: 2, keys: keys,
		mmaText: fmt.Sprintf("mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", half, half)}
}

// rowsAlignedTo reports whether every row of a [B, H, rows, cols] operand starts at a multiple
// of m elements (its offset and its first three strides are).
func rowsAlignedTo(o attnOperand, m int) bool {
	ok := o.off%m == 0
	for _, st := range o.strides[:3] {
		ok = ok && st%m == 0
	}
	return ok
}

// newTile declares a K or V tile of n columns and sets this thread's copies.
func (w *mmaAttn) newTile(name string, op attnOperand, n int) *mmaTile {
	kg := w.kg
	eb := w.eb
	t := &mmaTile{op: op, n: n, rowH: n + 16/eb, chunk: 1}
	switch {
	case rowsAlignedTo(op, 16/eb):
		t.chunk = 16 / eb
	case rowsAlignedTo(op, 4/eb):
		t.chunk = 4 / eb
	}
	perRow := n / t.chunk
	t.rpp = max(1, attnmma.Threads/perRow)
	t.tile = kg.md.sharedArray(kg.name+"_"+name, w.keys*t.rowH*eb, types.I8, 16)
	w.shBase[t.tile] = kg.b.NewPtrToInt(t.tile, types.I32)
	t.row0 = kg.div(w.tid, perRow)
	t.col0 = kg.mul(kg.rem(w.tid, perRow), t.chunk)
	t.dst = kg.mul(kg.add(kg.mul(t.row0, t.rowH), t.col0), eb)
	t.src0 = kg.add(w.index(op, w.bIdx, w.kh, t.row0), t.col0)
	return t
}

// shAddr is the 32-bit shared address of byte off of tile t (an inline asm's "r" operand).
func (w *mmaAttn) shAddr(t *mmaTile, off value.Value) value.Value {
	return w.kg.add(w.shBase[t.tile], off)
}

// ptrTo is a pointer to a ty at element lin of operand o.
func (w *mmaAttn) ptrTo(o attnOperand, lin value.Value, ty types.Type) value.Value {
	return w.kg.b.NewBitCast(w.kg.elemPtr(o.d, o.ptr, lin), w.ptrType(ty))
}

// ptrType is a global pointer to ty.
func (w *mmaAttn) ptrType(ty types.Type) *types.PointerType {
	pt := types.NewPointer(ty)
	pt.AddrSpace = 1
	return pt
}

// load16 is the 16-bit image (i16) of element lin of operand o.
func (w *mmaAttn) load16(o attnOperand, lin value.Value) value.Value {
	ld := w.kg.b.NewLoad(types.I16, w.ptrTo(o, lin, types.I16))
	ld.Align = 2
	return ld
}

// issue copies the tile of keys [t0, t0+keys) (zeros past S: left = S − t0) and commits the
// copies as one group.
func (w *mmaAttn) issue(t *mmaTile, t0, left value.Value) {
	kg, eb, keys := w.kg, w.eb, w.keys
	src := kg.elemPtr(t.op.d, t.op.ptr, kg.add(t.src0, w.stMul(t0, t.op, 2)))
	safe := kg.elemPtr(t.op.d, t.op.ptr, ci(0)) // a valid address for the zero-size copies
	dst := w.shAddr(t, t.dst)
	for i := 0; i*t.rpp < keys; i++ {
		row := i * t.rpp
		var in value.Value // the copy lies in the tile (threads past rpp rows of chunks idle)
		if t.rpp*t.n/t.chunk < attnmma.Threads || row+t.rpp > keys {
			in = kg.b.NewICmp(enum.IPredULT, t.row0, ci(min(t.rpp, keys-row)))
		}
		ok := kg.b.NewICmp(enum.IPredSLT, t.row0, kg.sub(left, ci(row)))
		at := src
		if row != 0 {
			g := kg.b.NewGetElementPtr(memType(t.op.d), src, w.stMul(ci(row), t.op, 2))
			g.InBounds = true
			at = g
		}
		at = kg.b.NewSelect(ok, at, safe)
		copyIt := func() {
			if t.chunk == 1 && eb == 2 {
				ld := kg.b.NewLoad(types.I16, kg.b.NewBitCast(at, w.ptrType(types.I16)))
				ld.Align = 2
				x := kg.b.NewSelect(ok, ld, constant.NewInt(types.I16, 0))
				p := kg.b.NewGetElementPtr(t.tile.ContentType, t.tile, ci(0), kg.add(t.dst, ci(2*row*t.rowH)))
				p.InBounds = true
				pt := types.NewPointer(types.I16)
				pt.AddrSpace = 3
				kg.b.NewStore(x, kg.b.NewBitCast(p, pt)).Align = 2
				return
			}
			kind := "ca"
			if eb*t.chunk == 16 {
				kind = "cg"
			}
			bytes := kg.b.NewSelect(ok, ci(eb*t.chunk), ci(0))
			kg.asm(fmt.Sprintf("cp.async.%s.shared.global [$0+%d], [$1], %d, $2;", kind, eb*row*t.rowH, eb*t.chunk), "r,l,r,~{memory}",
				dst, at, bytes)
		}
		if in == nil {
			copyIt()
		} else {
			kg.branch(in, "copy", copyIt)
		}
	}
	kg.asm("cp.async.commit_group;", "~{memory}")
}

// limit is the keys query row row sees (attnGen.keyLimit: S, row+1 or pos+row+1, within
// [0, S]).
func (w *mmaAttn) limit(row, posv value.Value) value.Value {
	return w.keyLimit(w.p.Op.Attrs.String("mask", ""), posv, row)
}

func (w *mmaAttn) body(out value.Value) {
	kg, p := w.kg, w.p
	b := func() *ir.Block { return kg.b }
	i32 := types.I32
	fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	pos, bias := w.extraOperands(w.ops)
	tf32, eb, keys := w.eb == 4, w.eb, w.keys
	kStep := 32 / eb // k of one mma: 16, or 8 for tf32

	rb := w.rowBlock(pos)
	lane, bh, h, g, tq, rowA, rowB := rb.lane, rb.bh, rb.h, rb.g, rb.tq, rb.rowA, rb.rowB
	warpLast, blockLast := rb.warpLast, rb.blockLast

	// Q's A fragments: ks-th 16 columns, registers (row g, k 2t), (g+8, 2t), (g, 2t+8),
	// (g+8, 2t+8); rows past L read row L−1's address and keep 0.
	qo := w.ops[0]
	qf := make([][4]value.Value, p.E/kStep)
	colT := 2 // the thread's first column is 2t, or t for tf32
	if tf32 {
		colT = 1
	}
	var rowEl, rowOK [2]value.Value
	for i, row := range []value.Value{rowA, rowB} {
		rowOK[i] = b().NewICmp(enum.IPredULT, row, w.dimL())
		rowEl[i] = kg.add(w.index(qo, w.bIdx, h, kg.umin(row, w.dimLast())), kg.mul(tq, colT*qo.strides[3]))
	}
	if tf32 {
		for ks := range qf {
			w.tf32Q(qf[ks][:], rowEl, rowOK, ks)
		}
	} else {
		w.halfA(qo, qf, rowEl, rowOK)
	}
	// Bias rows' elements at key 2t of key 0.
	var biasEl [2]value.Value
	if bias != nil {
		for i, row := range []value.Value{rowA, rowB} {
			biasEl[i] = kg.add(w.index(*bias, w.bIdx, h, kg.umin(row, w.dimLast())), kg.mul(tq, 2*bias.strides[3]))
		}
	}

	w.kt = w.newTile("ktile", w.ops[1], p.E)
	w.vt = w.newTile("vtile", w.ops[2], p.Ev)
	// ldmatrix lane addresses (lane l serves matrix l/8, row l%8). K (B operand, stored
	// [key][e]): matrices (key, e) = (0,0), (0,8), (8,0), (8,8); V (stored [key][ev], .trans):
	// (0,0), (8,0), (0,8), (8,8).
	q8, r8 := kg.div(lane, 8), kg.rem(lane, 8)
	kAddr := w.shAddr(w.kt, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.div(q8, 2), 8), r8), w.kt.rowH), kg.mul(kg.rem(q8, 2), 16/eb)), eb))
	vAddr := w.shAddr(w.vt, kg.mul(kg.add(kg.mul(kg.add(kg.mul(kg.rem(q8, 2), 8), r8), w.vt.rowH), kg.mul(kg.div(q8, 2), 8)), 2))
	if tf32 { // V's words (key 2t, ev g) and (2t+1, g)
		vAddr = kg.mul(kg.add(kg.mul(kg.mul(tq, 2), w.vt.rowH), g), eb)
	}

	nO := p.Ev / 8
	acc := w.zeros(4 * nO)
	var m, l [2]*ir.InstAlloca
	for i := range 2 {
		m[i], l[i] = kg.alloca(types.Float), kg.alloca(types.Float)
		b().NewStore(f32(math.Inf(-1)), m[i])
		b().NewStore(f32(0), l[i])
	}
	pf := make([][4]*ir.InstAlloca, keys/kStep)
	for kk := range pf {
		for j := range 4 {
			pf[kk][j] = kg.alloca(i32)
		}
	}
	// With a positive scale the scores stay unscaled and the exponent's fma applies
	// scale·log2 e; otherwise (or where it or the bias's 1/scale would leave f32's normal
	// range) they are scaled first.
	scale := p.Op.Attrs.Float("scale", 1)
	c2, k2 := scale*math.Log2E, 1.0
	fold := scale >= 1e-30 && scale <= 1e30
	if fold {
		k2 = c2
	}
	ld, ldmatrix, mma, ex2 := w.ld, w.ldmatrix, w.mma, w.ex2ftz
	s := w.zeros(4 * keys / 8)

	kg.branch(b().NewICmp(enum.IPredNE, blockLast, ci(0)), "attn", func() {
		w.issue(w.kt, ci(0), w.dimS())
		kg.loopTo(ci(0), ci(keys), blockLast, func(t0 value.Value) {
			left := kg.b.NewSub(w.dimS(), t0)
			w.issue(w.vt, t0, left)
			kg.asm("cp.async.wait_group 1;", "~{memory}") // K of this tile
			kg.barrier()
			busy := b().NewICmp(enum.IPredULT, t0, warpLast) // the warp's last row sees a key of this tile
			kg.branch(busy, "scores", func() {
				// S = Q·Kᵀ: n-tile j holds keys t0+8j…, values (row g, key 2t+c), (g+8, 2t+c).
				for _, r := range s {
					b().NewStore(f32(0), r)
				}
				for ks := range p.E / kStep {
					for np := range keys / 16 {
						kf := ldmatrix("ldmatrix.sync.aligned.m8n8.x4.shared.b16", kAddr, eb*(16*np*w.kt.rowH+kStep*ks))
						if tf32 {
							w.roundTF32(kf)
						}
						for x := range 2 {
							mma(s[4*(2*np+x):4*(2*np+x)+4], qf[ks][:], kf[2*x], kf[2*x+1])
						}
					}
				}
				if !fold {
					for _, r := range s {
						b().NewStore(b().NewFMul(ld(r), f32(c2)), r)
					}
				}
				if bias != nil {
					// scores += bias·log2 e (bias/scale unscaled) for keys < S.
					bk := math.Log2E
					if fold {
						bk = 1 / scale
					}
					kLeft := kg.b.NewSub(left, kg.mul(tq, 2))
					for j := range keys / 8 {
						for c := range 4 {
							ok := b().NewICmp(enum.IPredSGT, kLeft, ci(8*j+c%2))
							el := kg.add(kg.add(biasEl[c/2], b().NewMul(t0, ci(bias.strides[3]))), ci((8*j+c%2)*bias.strides[3]))
							var f value.Value
							if tf32 {
								f = b().NewSelect(ok, w.load(*bias, b().NewSelect(ok, el, w.offOf(*bias))), f32(0))
							} else {
								f = w.widen16(b().NewSelect(ok, w.load16(*bias, b().NewSelect(ok, el, w.offOf(*bias))), constant.NewInt(types.I16, 0)))
							}
							b().NewStore(b().NewCall(fma, f, f32(bk), ld(s[4*j+c])), s[4*j+c])
						}
					}
				}
				// Hide keys a row does not see.
				w.hideKeys(s, rb, t0, math.Inf(-1))
				// Online softmax in base 2, per row (codegen/ptx's order).
				for i := range 2 {
					mx := ld(m[i])
					for j := range keys / 8 {
						for c := range 2 {
							mx = kg.call("llvm.maxnum.f32", types.Float, mx, ld(s[4*j+2*i+c]))
						}
					}
					for _, off := range []int{1, 2} {
						mx = kg.call("llvm.maxnum.f32", types.Float, mx, kg.shuffleXor(irg.F32, mx, off))
					}
					ninf := b().NewFCmp(enum.FPredOEQ, mx, f32(math.Inf(-1)))
					nb := b().NewSelect(ninf, f32(0), b().NewFMul(mx, f32(-k2)))
					corr := ex2(b().NewCall(fma, ld(m[i]), f32(k2), nb))
					b().NewStore(mx, m[i])
					var sum value.Value = f32(0)
					for j := range keys / 8 {
						for c := range 2 {
							r := s[4*j+2*i+c]
							e := ex2(b().NewCall(fma, ld(r), f32(k2), nb))
							b().NewStore(e, r)
							sum = b().NewFAdd(sum, e)
						}
					}
					b().NewStore(b().NewCall(fma, ld(l[i]), corr, sum), l[i])
					for n := range nO {
						for c := range 2 {
							r := acc[4*n+2*i+c]
							b().NewStore(b().NewFMul(ld(r), corr), r)
						}
					}
				}
				// P's A fragments: keys 16kk… are S tiles 2kk and 2kk+1; tf32's keys 8kk… S
				// tile kk, (g, 2t), (g+8, 2t), (g, 2t+1), (g+8, 2t+1) rounded.
				for kk := range pf {
					if tf32 {
						for j := range 4 {
							b().NewStore(w.cvtTF32(ld(s[4*kk+2*(j%2)+j/2])), pf[kk][j])
						}
						continue
					}
					for j := range 4 {
						c := 4*(2*kk+j/2) + 2*(j%2)
						pk := kg.asmRet(i32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", ld(s[c+1]), ld(s[c]))
						b().NewStore(pk, pf[kk][j])
					}
				}
			})
			kg.barrier() // every warp is done with K
			next := kg.add(t0, ci(keys))
			more := b().NewICmp(enum.IPredULT, next, blockLast)
			kg.ifElse(more, func() { w.issue(w.kt, next, kg.b.NewSub(left, ci(keys))) },
				func() { kg.asm("cp.async.commit_group;", "~{memory}") }) // an empty group keeps the count in flight
			kg.asm("cp.async.wait_group 1;", "~{memory}") // V of this tile
			kg.barrier()
			kg.branch(busy, "pv", func() {
				// O += P·V: V's x4 .trans covers keys 16kk… and output columns 16nj….
				for kk := range pf {
					pa := []value.Value{ld(pf[kk][0]), ld(pf[kk][1]), ld(pf[kk][2]), ld(pf[kk][3])}
					if tf32 {
						w.tf32PV(acc, pa, vAddr, eb*8*kk*w.vt.rowH, mma)
						continue
					}
					for nj := range p.Ev / 16 {
						vf := ldmatrix("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", vAddr, 2*(16*kk*w.vt.rowH+16*nj))
						for x := range 2 {
							mma(acc[4*(2*nj+x):4*(2*nj+x)+4], pa, vf[2*x], vf[2*x+1])
						}
					}
				}
			})
			kg.barrier() // every warp is done with V
		})
	})

	// O = acc · (1/l), l summed over the quad (rcp.approx: l is 0, or at least 1).
	for i, row := range []value.Value{rowA, rowB} {
		li := ld(l[i])
		for _, off := range []int{1, 2} {
			li = b().NewFAdd(li, kg.shuffleXor(irg.F32, li, off))
		}
		inv := kg.asmRet(types.Float, "rcp.approx.f32 $0, $1;", "=f,f", li)
		outRow := kg.add(w.mulL(bh), row) // bh·L + row, at the run's L
		el := kg.add(kg.mul(outRow, p.Ev), kg.mul(tq, 2))
		if tf32 {
			w.storeTF32(out, el, acc, i, inv, rowOK[i])
		} else {
			w.storeHalf(out, el, acc, i, inv, rowOK[i])
		}
		if w.lse != nil { // attention_lse beside the result (attention_lse_mma.go)
			w.storeRowLSE(ld(m[i]), li, k2, tq, rowOK[i], outRow)
		}
	}
	kg.b.NewRet(nil)
}

// mmaRows are a thread's indices in a block of attnmma.Rows query rows of one (batch, head), 16
// per warp (the forward's and dq's blocks): its lane, its (batch, head) bh and head h, g = lane/4
// and tq = lane%4, its rows g and g+8 of its warp's, the keys those rows and its warp's first
// see (limA, limB, warpFirst), the keys its warp's last row sees (warpLast: 0 for a warp past L,
// which skips every product) and the block's last row below L (blockLast).
type mmaRows struct {
	lane, bh, h, g, tq, rowA, rowB             value.Value
	limA, limB, warpFirst, warpLast, blockLast value.Value
}

// rowBlock sets w.tid, w.bIdx and w.kh and returns the thread's rows; pos is the position mask's
// operand or nil. Blocks run the last row tiles first (FlashAttention-2's order), as codegen/ptx's.
func (w *mmaAttn) rowBlock(pos *attnOperand) mmaRows {
	kg, p := w.kg, w.p
	b := kg.b
	var r mmaRows
	w.tid = kg.sreg("tid.x")
	var warp value.Value
	r.lane, warp = b.NewAnd(w.tid, ci(31)), b.NewLShr(w.tid, ci(5))
	var rt value.Value
	r.bh, rt = w.blockTile(kg.sreg("ctaid.x")) // symattn_mma.go
	w.bIdx = kg.div(r.bh, p.H)
	r.h = kg.rem(r.bh, p.H)
	w.kh = kg.div(r.h, p.H/p.KVH)
	r.g, r.tq = kg.div(r.lane, 4), kg.rem(r.lane, 4)
	blockRow := kg.mul(rt, attnmma.Rows)
	warpRow := kg.add(kg.mul(warp, 16), blockRow)
	r.rowA = kg.add(warpRow, r.g)
	r.rowB = kg.add(r.rowA, ci(8))

	posv := w.position(pos, w.bIdx)
	r.limA, r.limB = w.limit(r.rowA, posv), w.limit(r.rowB, posv)
	r.warpFirst = w.limit(warpRow, posv)
	r.warpLast = b.NewSelect(b.NewICmp(enum.IPredUGE, warpRow, w.dimL()), ci(0), w.limit(kg.add(warpRow, ci(15)), posv))
	r.blockLast = w.limit(kg.umin(kg.add(blockRow, ci(attnmma.Rows-1)), w.dimLast()), posv)
	return r
}

// hideKeys sets the scores s of a tile of w.keys keys from t0 to fill where row rb.rowA or
// rb.rowB does not see the key, unless the warp's first row sees the whole tile.
func (w *mmaAttn) hideKeys(s []*ir.InstAlloca, rb mmaRows, t0 value.Value, fill float64) {
	kg, keys := w.kg, w.keys
	whole := kg.b.NewICmp(enum.IPredULE, kg.add(t0, ci(keys)), rb.warpFirst)
	kg.branch(kg.b.NewXor(whole, constant.True), "mask", func() {
		for i, lim := range []value.Value{rb.limA, rb.limB} {
			b := kg.b
			rel := b.NewSub(b.NewSub(lim, t0), kg.mul(rb.tq, 2))
			for j := range keys / 8 {
				for c := range 2 {
					r := s[4*j+2*i+c]
					ok := b.NewICmp(enum.IPredSGT, rel, ci(8*j+c))
					b.NewStore(b.NewSelect(ok, w.ld(r), f32(fill)), r)
				}
			}
		}
	})
}

// storeHalf writes row half i's outputs acc·inv, pairs of columns packed by cvt.rn.{f16,bf16}x2
// into one word per 8 columns, at element el of the output (column 2t of the row) where ok (the
// row is below L).
func (w *mmaAttn) storeHalf(out, el value.Value, acc []*ir.InstAlloca, i int, inv, ok value.Value) {
	kg := w.kg
	b := kg.b
	pks := make([]value.Value, len(acc)/4)
	for n := range pks {
		x := b.NewFMul(b.NewLoad(types.Float, acc[4*n+2*i]), inv)
		y := b.NewFMul(b.NewLoad(types.Float, acc[4*n+2*i+1]), inv)
		pks[n] = kg.asmRet(types.I32, "cvt.rn."+w.half+"x2.f32 $0, $1, $2;", "=r,f,f", y, x)
	}
	kg.branch(ok, "store", func() {
		for n, pk := range pks {
			st := kg.b.NewStore(pk, w.ptrTo(attnOperand{d: w.d, ptr: out}, kg.add(el, ci(8*n)), types.I32))
			st.Align = 4
		}
	})
}

// halfA sets the 16-bit A fragments of rows g and g+8 of operand o: the ks-th 16 columns'
// registers (row g, k 2t), (g+8, 2t), (g, 2t+8), (g+8, 2t+8); rowEl[i] is column 2t of the rows
// (a valid row's where the row is past the operand), rowOK[i] that the row holds data (else 0).
// Pairs of adjacent columns load as one word where they are 4-byte aligned.
func (w *mmaAttn) halfA(o attnOperand, f [][4]value.Value, rowEl, rowOK [2]value.Value) {
	kg := w.kg
	b := kg.b
	i32 := types.I32
	pairs := o.strides[3] == 1 && rowsAlignedTo(o, 2)
	for ks := range f {
		for j := range 4 {
			c := 16*ks + 8*(j/2)
			var x value.Value
			if pairs {
				ld := b.NewLoad(i32, w.ptrTo(o, kg.add(rowEl[j%2], ci(c)), i32))
				ld.Align = 4
				x = ld
			} else {
				lo := b.NewZExt(w.load16(o, kg.add(rowEl[j%2], ci(c*o.strides[3]))), i32)
				hi := b.NewZExt(w.load16(o, kg.add(rowEl[j%2], ci((c+1)*o.strides[3]))), i32)
				x = b.NewOr(lo, b.NewShl(hi, ci(16)))
			}
			f[ks][j] = b.NewSelect(rowOK[j%2], x, ci(0))
		}
	}
}

// ld loads an f32 or i32 slot.
func (w *mmaAttn) ld(a *ir.InstAlloca) value.Value { return w.kg.b.NewLoad(a.ElemType, a) }

// ldmatrix is an ldmatrix x4 (text: its instruction) at 32-bit shared address addr + off: the
// constant offset is the instruction's, as codegen/ptx writes it ([addr+off]).
func (w *mmaAttn) ldmatrix(text string, addr value.Value, off int) []value.Value {
	kg, i32 := w.kg, types.I32
	res := kg.asmRet(types.NewStruct(i32, i32, i32, i32), fmt.Sprintf("%s {$0, $1, $2, $3}, [$4+%d];", text, off), "=r,=r,=r,=r,r,~{memory}", addr)
	b := kg.b
	return []value.Value{b.NewExtractValue(res, 0), b.NewExtractValue(res, 1), b.NewExtractValue(res, 2), b.NewExtractValue(res, 3)}
}

// mma adds A fragment a times B fragment (b0, b1) to the 4 accumulators c (one mma.sync).
func (w *mmaAttn) mma(c []*ir.InstAlloca, a []value.Value, b0, b1 value.Value) {
	kg := w.kg
	in := append(append([]value.Value{}, a...), b0, b1)
	for _, x := range c {
		in = append(in, w.ld(x))
	}
	res := kg.asmRet(types.NewStruct(types.Float, types.Float, types.Float, types.Float), w.mmaText, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", in...)
	for j, x := range c {
		kg.b.NewStore(kg.b.NewExtractValue(res, uint64(j)), x)
	}
}

// ex2ftz is ex2.approx.ftz.f32 of x (inline assembly).
func (w *mmaAttn) ex2ftz(x value.Value) value.Value {
	return w.kg.asmRet(types.Float, "ex2.approx.ftz.f32 $0, $1;", "=f,f", x)
}

// widen16 is the f32 value of a 16-bit image (i16) of the operands' dtype.
func (w *mmaAttn) widen16(h value.Value) value.Value {
	b := w.kg.b
	if w.d == irg.F16 {
		return b.NewFPExt(b.NewBitCast(h, types.Half), types.Float)
	}
	return b.NewBitCast(b.NewShl(b.NewZExt(h, types.I32), ci(16)), types.Float)
}

// ifElse runs then where cond holds, els where it does not, and continues after both.
func (kg *kgen) ifElse(cond value.Value, then, els func()) {
	t, e, after := kg.block("then"), kg.block("else"), kg.block("endif")
	kg.b.NewCondBr(cond, t, e)
	for _, arm := range []struct {
		b    *ir.Block
		body func()
	}{{t, then}, {e, els}} {
		kg.b = arm.b
		kg.cache = map[cacheKey]value.Value{}
		arm.body()
		kg.b.NewBr(after)
	}
	kg.cache = map[cacheKey]value.Value{}
	kg.b = after
}
