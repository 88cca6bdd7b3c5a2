package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// The split-KV template appending a decoding step's K and V rows to the caches itself (the
// passes' appendkv; FlashAttention's flash_attn_with_kvcache with k_new and v_new): the kernel
// computes update_slice(cache, rows, start) {axis=2} in place and attends over the result. Every
// block reads keys [p, p+T) (p = clamp(start[b], 0, S−T), as update_slice clamps) from the rows,
// the projection's output, and the rest from the cache; the blocks of the first chunk write the
// rows into the cache. No block reads a cache element another block writes, so the step needs
// no update kernel before it and no ordering between the blocks.

// attnAppend is an appended operand's update: its rows (as an operand [B, KVH, T, n]), start
// and result, and the register holding the block's clamped start p.
type attnAppend struct {
	u     *ir.Value
	rows  attnOperand
	start attnOperand
	p     string
}

// appendOperands replaces the attention op's K and V operands that are appended caches by the
// cache (read in place) with their update (plan.AttentionAppendedCaches checks the kernel).
func (w *attnWriter) appendOperands(k Kernel, operands []attnOperand) error {
	appended, err := plan.AttentionAppendedCaches(k, w.p)
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ { // in operand order: the entry's text is deterministic
		u, ok := appended[i]
		if !ok {
			continue
		}
		rows, err := attentionOperand(u.Args[1], w.ptr)
		if err != nil {
			return err
		}
		o, err := attentionOperand(u.Args[0], w.ptr)
		if err != nil {
			return err
		}
		o.app = &attnAppend{u: u, rows: rows, start: attnOperand{ptr: w.ptr[u.Args[2]]}}
		operands[i] = o
	}
	return nil
}

// appendRows loads each appended operand's clamped start for batch entry b and, in the blocks
// of the first chunk (split = 0), copies the rows of KV head kh into the cache, as raw bits.
func (w *attnWriter) appendRows(operands []attnOperand, threads int, tid, split, b, kh string) {
	for i, o := range operands {
		if o.app == nil {
			continue
		}
		a, u := o.app, o.app.u
		t, n, s := u.Args[1].Type.Shape[2], u.Type.Shape[3], w.p.S
		a.p = w.clampedStart(u.Args[2].Type.DType, a.start.ptr, b, s-t)
		done := fmt.Sprintf("$%s_appended%d", w.name, i)
		first := w.reg("pred")
		w.ins("setp.ne.u32", first, split, "0")
		w.ins("@"+first+" bra.uni", done)
		j, tt, e, src, dst := w.reg("b32"), w.reg("b32"), w.reg("b32"), w.reg("b32"), w.reg("b32")
		w.ins("mov.u32", j, tid)
		top := fmt.Sprintf("$%s_append%d", w.name, i)
		w.label(top)
		in := w.reg("pred")
		w.ins("setp.lt.u32", in, j, uimm(t*n))
		w.ins("@!"+in+" bra", done)
		w.ins("div.u32", tt, j, uimm(n))
		w.ins("rem.u32", e, j, uimm(n))
		w.ins("mov.u32", src, w.index(a.rows, b, kh, tt, e))
		// The row's place in the cache: ((b·KVH + kh)·S + p + t)·n + e.
		w.ins("mad.lo.s32", dst, b, uimm(w.p.KVH), kh)
		w.ins("mad.lo.s32", dst, dst, uimm(s), a.p)
		w.ins("add.s32", dst, dst, tt)
		w.ins("mad.lo.s32", dst, dst, uimm(n), e)
		size := u.Type.DType.Size()
		bits := map[int]string{2: "b16", 4: "b32"}[size]
		x := w.reg(bits)
		w.ins("ld.global."+bits, x, w.addr(a.rows.ptr, src, size))
		w.ins("st.global."+bits, w.addr(w.ptr[u], dst, size), x)
		w.ins("add.s32", j, j, uimm(threads))
		w.ins("bra", top)
		w.label(done)
	}
}

// clampedStart loads start[b] (integers of dtype d) clamped to [0, hi], as update_slice
// clamps, into a u32 register.
func (w *attnWriter) clampedStart(d ir.DType, base, b string, hi int) string {
	p := w.intAt(d, base, b)
	w.ins("max.s64", p, p, "0")
	w.ins("min.s64", p, p, uimm(hi))
	r := w.reg("b32")
	w.ins("cvt.u32.u64", r, p)
	return r
}

// loadAppendedKey loads v elements of key key, column e, of an appended operand into xs: from
// the rows when the key is one of the step's [p, p+T), else from the cache.
func (w *attnWriter) loadAppendedKey(d ir.DType, o attnOperand, v int, b, kh, key, e string, xs []string) {
	a := o.app
	rel, isNew := w.reg("b32"), w.reg("pred")
	w.ins("sub.s32", rel, key, a.p)
	w.ins("setp.lt.u32", isNew, rel, uimm(a.u.Args[1].Type.Shape[2])) // a key below p wraps past T
	fromRows, loaded := w.newLabel("rows"), w.newLabel("loaded")
	w.ins("@"+isNew+" bra", fromRows)
	load := func(src attnOperand, row string) {
		if v == 1 {
			w.ins("mov.f32", xs[0], w.loadF32(d, src.ptr, w.index(src, b, kh, row, e)))
		} else {
			w.loadVector(d, src.ptr, w.index(src, b, kh, row, e), xs)
		}
	}
	load(o, key)
	w.ins("bra", loaded)
	w.label(fromRows)
	load(a.rows, rel)
	w.label(loaded)
}

// newLabel returns a label of the kernel not used before.
func (w *attnWriter) newLabel(what string) string {
	return fmt.Sprintf("$%s_%s%d", w.name, what, w.nreg)
}

// appendedVector lowers an appended operand's load width to what its rows allow.
func appendedVector(o attnOperand, d ir.DType, n, v int) int {
	if o.app == nil {
		return v
	}
	return min(v, AttentionTileVector(d, n, o.app.rows.off, o.app.rows.strides))
}
