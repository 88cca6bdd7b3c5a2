package ptx

import (
	"github.com/gcomp/gcomp/ir"
)

// The update template: one update_slice op (ops.UpdateSliceOp), a KV cache's new rows written at
// a position per batch row. Written in place (Kernel.InPlace: the result's memory is the
// operand's), a thread per element of the update copies it to its row, and the launch covers the
// update only — one token's keys, not the cache. Otherwise a thread per element of the result
// copies the operand's element or the update's. Elements move as raw bits, so every dtype is
// exact (NaN payloads and -0 too).

func updateKernel(k Kernel, v *ir.Value, globals *[]string) (string, Launch, error) {
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	l := UpdatePlan(v)
	n := l.Elements(k.InPlace)
	if k.InPlace {
		b.note("update_slice in place: one thread per element of the update [%d, %d, %d] (batch·heads, rows, row)", l.B*l.M, l.T, l.N)
	} else {
		b.note("update_slice into a new buffer: one thread per element of the result [%d, %d, %d]", l.B*l.M, l.S, l.N)
	}
	operand, update, start := gn.ptr[v.Args[0]], gn.ptr[v.Args[1]], gn.ptr[v.Args[2]]
	out := gn.outPtr[0]
	size := v.Type.DType.Size()
	end, work, err := updateEnd(k, b, &args, n)
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	gn.loopTo(tid, nthreads, end, func(i string) error {
		rows := l.T
		if !k.InPlace {
			rows = l.S
		}
		// i = (bm·rows + row)·N + j
		r, bm, row := b.reg(rU32), b.reg(rU32), b.reg(rU32)
		b.ins("div.u32", r, i, imm(l.N))
		b.ins("div.u32", bm, r, imm(rows))
		b.ins("rem.u32", row, r, imm(rows))
		p := updateStart(b, start, v.Args[2].Type.DType, bm, l)
		if k.InPlace {
			// The element's place in the result: i + (bm·(S−T) + p)·N.
			dst := b.reg(rU32)
			b.ins("mad.lo.s32", dst, bm, imm(l.S-l.T), p)
			b.ins("mad.lo.s32", dst, dst, imm(l.N), i)
			return gn.updateElement(v, out, dst, update, i, size)
		}
		// Rows p..p+T−1 come from the update (row p+t at (bm·T + t)·N + j), the others from the
		// operand at i.
		rel, src, j := b.reg(rU32), b.reg(rU32), b.reg(rU32)
		b.ins("sub.s32", rel, row, p)
		outside, done := b.reg(rPred), b.label("copied")
		b.ins("setp.ge.u32", outside, rel, imm(l.T)) // row < p wraps to a large unsigned value
		keep := b.label("keep")
		b.braIf(outside, keep)
		b.ins("rem.u32", j, i, imm(l.N))
		b.ins("mad.lo.s32", src, bm, imm(l.T), rel)
		b.ins("mad.lo.s32", src, src, imm(l.N), j)
		if err := gn.updateElement(v, out, i, update, src, size); err != nil {
			return err
		}
		b.bra(done)
		b.place(keep)
		copyElement(b, out, i, operand, i, size)
		b.place(done)
		return nil
	})
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	grid, block := l.Launch(k.InPlace)
	return b.text(), Launch{Grid: grid, Block: block, Params: args, Work: work}, nil
}

// updateStart loads start[bm / M] and clamps it to [0, S−T], as the op defines; the result is a
// u32 register.
func updateStart(b *builder, start string, d ir.DType, bm string, l UpdateLayout) string {
	batch, addr := b.reg(rU32), b.reg(rU64)
	b.ins("div.u32", batch, bm, imm(l.M))
	b.ins("mad.wide.u32", addr, batch, imm(d.Size()), start)
	p := b.reg(rU64)
	switch d {
	case ir.I64:
		b.ins("ld.global.s64", p, "["+addr+"]")
	case ir.U8:
		w := b.reg(rU32)
		b.ins("ld.global.u8", w, "["+addr+"]")
		b.ins("cvt.u64.u32", p, w)
	default: // i32, i8: sign-extended
		w := b.reg(rU32)
		b.ins("ld.global."+memType(d), w, "["+addr+"]")
		b.ins("cvt.s64.s32", p, w)
	}
	b.ins("max.s64", p, p, "0")
	b.ins("min.s64", p, p, imm(l.S-l.T))
	r := b.reg(rU32)
	b.ins("cvt.u32.u64", r, p)
	return r
}

// updateElement writes element si of v's update to element di of out: a copy of raw bits from
// the update's buffer, or, where the kernel reads the update through views (the K rows of a
// fused projection's output), the element evaluated through them.
func (gn *gen) updateElement(v *ir.Value, out, di, update, si string, size int) error {
	if u := v.Args[1]; u.Op != ir.OpInput && u.Op != ir.OpParam {
		x, err := gn.eval(u, newIndexLin(u.Type.Shape, si))
		if err != nil {
			return err
		}
		gn.store(v, out, di, x)
		return nil
	}
	copyElement(gn.e.b, out, di, update, si, size)
	return nil
}

// copyElement copies element si of src to element di of dst, size bytes, as raw bits.
func copyElement(b *builder, dst, di, src, si string, size int) {
	typ, class := map[int]string{1: "u8", 2: "b16", 4: "b32", 8: "b64"}[size], map[int]regClass{1: rU32, 2: rB16, 4: rU32, 8: rU64}[size]
	from, to, x := b.reg(rU64), b.reg(rU64), b.reg(class)
	b.ins("mad.wide.u32", from, si, imm(size), src)
	b.ins("mad.wide.u32", to, di, imm(size), dst)
	b.ins("ld.global."+typ, x, "["+from+"]")
	b.ins("st.global."+typ, "["+to+"]", x)
}
