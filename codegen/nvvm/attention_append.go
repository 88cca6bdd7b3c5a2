package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// codegen/ptx's split-KV template that appends a decoding step's K and V rows to the caches
// itself (its attention_append.go; splitkv.Appended): the kernel computes update_slice(cache,
// rows, start) {axis=2} in place and attends over the result. Every block reads keys [p, p+T)
// (p = clamp(start[b], 0, S−T)) from the rows and the rest from the cache; the blocks of the
// first chunk copy the rows into the cache as raw bits. No block reads a cache element another
// block writes. The loads differ from codegen/ptx's in where they come from, never in their
// values, so the output is bit for bit codegen/ptx's.

// attnAppend is an appended operand's update: its rows (an operand [B, KVH, T, n]), its
// positions, the output the update is written to (the cache's memory) and the block's clamped
// start p.
type attnAppend struct {
	u     *irg.Value
	rows  attnOperand
	start attnOperand
	out   value.Value
	p     value.Value
}

// output is the pointer of the kernel's output v (nil if the kernel does not write it).
func (kg *kgen) output(v *irg.Value) value.Value {
	for i, o := range kg.g.Outputs {
		if o.Value == v {
			return kg.outPtr[i]
		}
	}
	return nil
}

// appendOperands replaces the attention op's K and V operands that are appended caches by the
// cache (read in place) with their update (plan.AttentionAppendedCaches checks the kernel).
func (ag *attnGen) appendOperands(k plan.Kernel, operands []attnOperand) error {
	kg := ag.kg
	appended, err := plan.AttentionAppendedCaches(k, ag.p)
	if err != nil {
		return err
	}
	for i := 1; i <= 2; i++ { // in operand order: the entry's text is deterministic
		u, ok := appended[i]
		if !ok {
			continue
		}
		rows, err := kg.attentionOperand(u.Args[1])
		if err != nil {
			return err
		}
		o, err := kg.attentionOperand(u.Args[0])
		if err != nil {
			return err
		}
		start := u.Args[2]
		o.app = &attnAppend{u: u, rows: rows, start: attnOperand{d: start.Type.DType, ptr: kg.ptr[start]}, out: kg.output(u)}
		operands[i] = o
	}
	return nil
}

// appendRows sets each appended operand's clamped start for batch entry b and, in the blocks of
// the first chunk (split = 0), copies the rows of KV head kh into the cache, as raw bits.
func (ag *attnGen) appendRows(operands []attnOperand, tid, split, b, kh value.Value) {
	kg := ag.kg
	for _, o := range operands {
		if o.app == nil {
			continue
		}
		a, u := o.app, o.app.u
		t, n, s := u.Args[1].Type.Shape[2], u.Type.Shape[3], ag.p.S
		a.p = kg.updateStart(a.start.ptr, a.start.d, b, plan.UpdateLayout{M: 1, S: s, T: t})
		kg.branch(kg.b.NewICmp(enum.IPredEQ, split, ci(0)), "append", func() {
			kg.loop(tid, ci(ag.threads), t*n, func(j value.Value) {
				tt, e := kg.div(j, n), kg.rem(j, n)
				// The row's place in the cache: ((b·KVH + kh)·S + p + t)·n + e.
				dst := kg.add(kg.mul(kg.add(kg.add(kg.mul(kg.add(kg.mul(b, ag.p.KVH), kh), s), a.p), tt), n), e)
				kg.copyBits(u.Type.DType, a.out, dst, a.rows.ptr, ag.index(a.rows, b, kh, tt, e))
			})
		})
	}
}

// loadAppendedKey loads v elements of key key, column e, of an appended operand into xs: from
// the rows when the key is one of the step's [p, p+T), else from the cache.
func (ag *attnGen) loadAppendedKey(o attnOperand, v int, b, kh, key, e value.Value, xs []*ir.InstAlloca) {
	kg, a := ag.kg, o.app
	rel := kg.b.NewSub(key, a.p)
	isNew := kg.b.NewICmp(enum.IPredULT, rel, ci(a.u.Args[1].Type.Shape[2])) // a key below p wraps past T
	kg.ifElse(isNew, func() { ag.loadKey(a.rows, v, b, kh, rel, e, xs) }, func() { ag.loadKey(o, v, b, kh, key, e, xs) })
}

// tileVector is how many elements of a K or V operand of n columns loadTile reads at once
// (plan.AttentionTileVector), an appended operand's no more than its rows allow.
func tileVector(o attnOperand, n int) int {
	v := plan.AttentionTileVector(o.d, n, o.off, o.strides)
	if o.app != nil {
		v = min(v, plan.AttentionTileVector(o.d, n, o.app.rows.off, o.app.rows.strides))
	}
	return v
}
