package ptx

// gradBiasReader reads the additive bias of the tensor-core dk/dv template: element (row, key)
// of the current query head for each of the thread's Pᵀ values (keys g and g+8 of the warp).
type gradBiasReader struct {
	op     attnOperand
	b0     string    // batch entry
	keyEl  [2]string // keys g and g+8 (clamped below S) times the key stride
	headBH string    // the current head's first element address (retarget)
}

// gradBias sets up the bias reader of batch entry b0 for keys keyA and keyB, or returns nil when
// the op has no bias (operand 3: the template takes no position mask).
func (w *attnMMA) gradBias(operands []attnOperand, b0, keyA, keyB string) *gradBiasReader {
	op := w.p.Op
	if !op.Attrs.Bool("additive", false) {
		return nil
	}
	b, a := w.b, w.a
	r := &gradBiasReader{op: operands[3], b0: b0, headBH: b.reg(rU64)}
	for i, key := range []string{keyA, keyB} {
		r.keyEl[i] = a.reg(a.mul(w.clampS(key), r.op.strides[3]))
	}
	return r
}

// retarget points the reader at query head h.
func (r *gradBiasReader) retarget(w *attnMMA, h string) {
	if r == nil {
		return
	}
	b, a := w.b, w.a
	el := w.madSt(h, r.op, 1, w.madSt(r.b0, r.op, 0, w.offOf(r.op)))
	o := b.reg(rU64)
	b.ins("mul.wide.u32", o, a.reg(el), "2")
	b.ins("add.s64", r.headBH, r.op.ptr, o)
}

// load returns bias (row, key i) as f32 where ok (the row is below L), else 0. A key past S
// reads key S−1: its Pᵀ row feeds only dk and dv rows that are never stored.
func (r *gradBiasReader) load(w *attnMMA, row string, i int, ok string) string {
	b, a := w.b, w.a
	addr, o := b.reg(rU64), b.reg(rU64)
	b.ins("mul.wide.u32", o, a.reg(w.madSt(row, r.op, 2, r.keyEl[i])), "2")
	b.ins("add.s64", addr, r.headBH, o)
	hv, f := b.reg(rB16), b.reg(rF32)
	b.ins("mov.b16", hv, "0")
	b.guarded(ok, "ld.global.b16", hv, "["+addr+"]")
	w.toF32(f, hv, w.p.Op.Args[0].Type.DType)
	return f
}
