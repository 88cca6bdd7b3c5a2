package nvvm

import (
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
)

// codegen/ptx's split-KV attention template (its attention_decode.go; flash-decoding) from the
// same plan (splitkv.Of): block (split, KV head, batch entry) loads its chunk of K and V, a tile
// at a time, once for every query row that reads the KV head, and each warp folds the tile into
// its rows' online softmax with the CUDA-core template's pieces (attention.go). The chunk ends at
// the block's last visible key. Without a split the rows are finished in place; with one, each
// row's maximum, sum and unnormalized output go to scratch, and the (batch entry, KV head)'s
// last block (an integer ticket: atomicrmw add between llvm.nvvm.membar.gl and a barrier)
// rescales the chunks' partials to their common maximum and sums them in chunk order
// (llvm.fma.f32, ex2.approx.f32 as codegen/ptx executes them; volatile loads: the other blocks'
// stores are not in its L1), zeroes them and its counter, and writes the rows. The same bits
// every run, and codegen/ptx's.

// decodeKernel finishes attentionKernel for a split-KV plan: the kernel, its operands and its
// parameters (the scratch last, with a split, then a symbolic batch: work) are bound.
func (ag *attnGen) decodeKernel(sp splitkv.Plan, operands []attnOperand, args []plan.Arg, work *plan.SymWork) (*ir.Func, plan.Launch, error) {
	kg, md := ag.kg, ag.kg.md
	ag.threads = sp.Threads()
	// codegen/ptx's .maxntid, without its .minnctapersm 2: with it ptxas 11.8 took libNVVM's
	// unrolled key loop to 93 registers at d = 64 (54 and 30 without; no spills either way).
	md.ann = append(md.ann, md.tuple(kg.f, &metadata.String{Value: "maxntidx"}, md.i32(int64(sp.Threads()))))
	if ag.sym != nil {
		ag.exitPastChunks() // symattn_decode_len.go
	}
	if work != nil && work.Axis == 2 {
		ag.exitPastBatch() // symattn_decode.go
	}
	ag.decode(sp, operands, kg.output(ag.p.Op))
	return kg.f, plan.Launch{Grid: sp.Grid(), Block: [3]int{sp.Threads(), 1, 1}, Params: args, Work: work}, nil
}

// decode writes the kernel's body: operands q, k, v[, pos][, bias] and the output at out.
func (ag *attnGen) decode(sp splitkv.Plan, operands []attnOperand, out value.Value) {
	kg := ag.kg
	mask := ag.p.Op.Attrs.String("mask", "")
	pos, bias := ag.extraOperands(operands)
	tid := kg.sreg("tid.x")
	lane, warp := kg.b.NewAnd(tid, ci(31)), kg.b.NewLShr(tid, ci(5))
	split, kh, b := kg.sreg("ctaid.x"), kg.sreg("ctaid.y"), kg.sreg("ctaid.z")
	posv := ag.position(pos, b)
	ag.appendRows(operands, tid, split, b, kh)

	// The chunk [k0, kend): kend stops at the block's last visible key (query index L−1's).
	k0 := kg.mul(split, sp.Chunk)
	kend := kg.umin(kg.umin(kg.add(k0, ci(sp.Chunk)), ag.dimS()), ag.keyLimit(mask, posv, ci(sp.L-1)))

	// The warp's rows (w, w+Warps, …) and the keys each sees.
	rows := make([]*attnRow, sp.RowSlots)
	for j := range rows {
		r := kg.add(warp, ci(j*sp.Warps))
		active := kg.b.NewICmp(enum.IPredULT, r, ci(sp.Rows))
		i := kg.rem(r, sp.L)
		h := kg.add(kg.mul(kh, sp.Group), kg.div(r, sp.L))
		rows[j] = ag.newRow(operands[0], b, h, i, lane, active)
		rows[j].r = r
		rows[j].lim = kg.umin(ag.keyLimit(mask, posv, i), kend)
	}
	ag.tileLoop(operands, tid, k0, kend, kend, b, kh, func(t0 value.Value) {
		for _, rw := range rows {
			ag.foldTile(rw, t0, lane, b, bias)
		}
	})
	if sp.Splits == 1 {
		for _, rw := range rows {
			ag.finishRow(rw, lane, b, out, rw.acc, rw.l)
		}
		kg.b.NewRet(nil)
		return
	}

	// Publish: row r's partial at (((b·KVH + kh)·Splits + split)·Rows + r)·(Ev+2).
	stride := sp.PartialStride()
	head := kg.add(kg.mul(b, sp.KVH), kh) // the (batch entry, KV head)
	counter := ag.scratchAt(types.I32, kg.add(head, ci(sp.PartialFloats())))
	head = kg.mul(head, sp.Splits) // its first partial row / Rows
	lane0 := kg.b.NewICmp(enum.IPredEQ, lane, ci(0))
	for _, rw := range rows {
		kg.branch(rw.active, "publish", func() {
			at := kg.mul(kg.add(kg.mul(kg.add(head, split), sp.Rows), rw.r), stride)
			kg.branch(lane0, "ml", func() {
				ag.storePartial(at, kg.b.NewLoad(types.Float, rw.m))
				ag.storePartial(kg.add(at, ci(1)), kg.b.NewLoad(types.Float, rw.l))
			})
			for c, a := range rw.acc {
				e := kg.add(lane, ci(32*c))
				kg.branch(kg.b.NewICmp(enum.IPredULT, e, ci(sp.Ev)), "acc", func() {
					ag.storePartial(kg.add(kg.add(at, e), ci(2)), kg.b.NewLoad(types.Float, a))
				})
			}
		})
	}
	kg.membar()
	kg.barrier()
	// Thread 0 takes a ticket; the block goes on only if it was the last of Splits.
	t0 := kg.b.NewICmp(enum.IPredEQ, tid, ci(0))
	kg.lastTicket(t0, counter, ag.dimLastSplit(sp), nil, func() {
		kg.branch(t0, "reset", func() { kg.b.NewStore(ci(0), counter).Align = 4 }) // ready for the next launch
		for _, rw := range rows {
			ag.combineRow(rw, sp, lane, head, b, out)
		}
	})
	kg.b.NewRet(nil)
}

// scratchAt points at 4-byte element i of the scratch buffer, of type t (f32 or i32).
func (ag *attnGen) scratchAt(t types.Type, i value.Value) value.Value {
	b := ag.kg.b
	pt := types.NewPointer(t)
	pt.AddrSpace = 1
	p := b.NewGetElementPtr(t, b.NewBitCast(ag.kg.scratch, pt), i)
	p.InBounds = true
	return p
}

func (ag *attnGen) storePartial(i, x value.Value) {
	ag.kg.b.NewStore(x, ag.scratchAt(types.Float, i)).Align = 4
}

// loadPartial reads partial float i another block wrote (volatile: not from this SM's L1).
func (ag *attnGen) loadPartial(i value.Value) value.Value {
	ld := ag.kg.b.NewLoad(types.Float, ag.scratchAt(types.Float, i))
	ld.Align, ld.Volatile = 4, true
	return ld
}

// combineRow, in the last block, rescales the row's partials of every split to their common
// maximum and sums them in split order, zeroing them, then writes the row.
func (ag *attnGen) combineRow(rw *attnRow, sp splitkv.Plan, lane, head, b, out value.Value) {
	kg := ag.kg
	stride := sp.PartialStride()
	l := ag.zeros(1)[0]
	acc := ag.zeros((sp.Ev + 31) / 32)
	kg.branch(rw.active, "combine", func() {
		// split s's partial of the row starts at ((head + s)·Rows + r)·stride.
		first := kg.mul(kg.add(kg.mul(head, sp.Rows), rw.r), stride)
		at := func(s value.Value) value.Value { return kg.add(kg.mul(s, sp.Rows*stride), first) }
		mx := kg.alloca(types.Float)
		kg.b.NewStore(f32(math.Inf(-1)), mx)
		kg.loopTo(ci(0), ci(1), ag.dimSplits(sp), func(s value.Value) {
			kg.b.NewStore(kg.call("llvm.maxnum.f32", types.Float, kg.b.NewLoad(types.Float, mx), ag.loadPartial(at(s))), mx)
		})
		m := kg.b.NewLoad(types.Float, mx)
		base := kg.b.NewSelect(kg.b.NewFCmp(enum.FPredOEQ, m, f32(math.Inf(-1))), f32(0), m)
		fma := kg.md.declare("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
		kg.loopTo(ci(0), ci(1), ag.dimSplits(sp), func(s value.Value) {
			a := at(s)
			wt := kg.ex2(kg.b.NewFSub(ag.loadPartial(a), base))
			kg.b.NewStore(kg.b.NewCall(fma, ag.loadPartial(kg.add(a, ci(1))), wt, kg.b.NewLoad(types.Float, l)), l)
			for c := range acc {
				e := kg.add(lane, ci(32*c))
				x := ag.zeros(1)[0]
				kg.branch(kg.b.NewICmp(enum.IPredULT, e, ci(sp.Ev)), "part", func() {
					i := kg.add(kg.add(a, e), ci(2))
					kg.b.NewStore(ag.loadPartial(i), x)
					ag.storePartial(i, f32(0)) // the scratch is left zero
				})
				kg.b.NewStore(kg.b.NewCall(fma, kg.b.NewLoad(types.Float, x), wt, kg.b.NewLoad(types.Float, acc[c])), acc[c])
			}
		})
		// Every lane has read the maxima and sums: lanes zero them, split s by lane s mod 32.
		kg.asm("bar.warp.sync -1;", "~{memory}")
		kg.loopTo(lane, ci(32), ag.dimSplits(sp), func(s value.Value) {
			a := at(s)
			ag.storePartial(a, f32(0))
			ag.storePartial(kg.add(a, ci(1)), f32(0))
		})
	})
	ag.finishRow(rw, lane, b, out, acc, l)
}
