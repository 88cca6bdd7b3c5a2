package ptx

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The attention template (ops' attention, found by passes' findAttention): FlashAttention-2's
// online softmax on CUDA cores. A block of attnWarps warps takes attnWarps consecutive query rows
// of one (batch, head), a warp per row, each lane holding the row's q and output accumulator
// elements lane, lane+32, ... in registers. K and V stream through shared memory a tile of
// AttentionPlan.Keys keys at a time; per key the warp sums q·k by a butterfly of shuffles and
// updates the row's running max m and sum l, rescaling the accumulator by 2^(m_old − m_new)
// (scores are kept in base 2: scale·log2 e is folded into the product). Tiles past the block's
// last visible key (causal and position masks) are never loaded, so a causal kernel does half the
// work, and the [heads, L, S] scores never exist in memory. f16/bf16 prefill takes the
// tensor-core template instead (attention_mma.go); split-KV decoding is docs/codegen.md's next
// step.

// attnOperand is one operand of the attention op as the template reads it: a buffer through
// views, as an offset and a stride per dim (ops.StridedView; 0 for dims of size 1).
type attnOperand struct {
	ptr     string
	off     int
	strides []int
	app     *attnAppend // an appended cache's update (attention_append.go), else nil
	// symOff and symSt hold the offset and strides at symbolic sizes (symattn.go), else "" and nil.
	symOff string
	symSt  []string
}

// attentionOperand resolves an operand of the attention op to a kernel input and its strides.
func attentionOperand(v *ir.Value, ptr map[*ir.Value]string) (attnOperand, error) {
	base, off, st, ok := ops.StridedView(v)
	if !ok || base.Op != ir.OpInput && base.Op != ir.OpParam {
		return attnOperand{}, fmt.Errorf("attention reads %s, want a buffer or a strided view of one", v.Op)
	}
	for d, n := range v.Type.Shape {
		if n == 1 {
			st[d] = 0 // broadcast (bias [1, H, L, S]) or a lone index
		}
	}
	return attnOperand{ptr: ptr[base], off: off, strides: st}, nil
}

// index emits off + Σ idx[d]·strides[d] (32 bits: the kernel's buffers hold fewer than 2^31
// elements); an empty idx entry is index 0.
func (w *attnWriter) index(o attnOperand, idx ...string) string {
	if o.symSt != nil {
		return w.symIndex(o, idx)
	}
	r := w.reg("b32")
	w.ins("mov.u32", r, uimm(o.off))
	for d, x := range idx {
		if x != "" && o.strides[d] != 0 {
			w.ins("mad.lo.s32", r, x, uimm(o.strides[d]), r)
		}
	}
	return r
}

// attentionKernel emits the template for a kernel whose only computation is one attention op.
func attentionKernel(k Kernel, t Target) (string, Launch, error) {
	g := k.Graph
	p, _ := PlanAttention(g)
	for _, v := range live(g) {
		switch v.Op {
		case ops.AttentionOp, ops.AttentionLSEOp, ir.OpInput, ir.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice", ops.UpdateSliceOp:
		default:
			return "", Launch{}, fmt.Errorf("attention fused with %s is not supported", v.Op)
		}
	}
	var lse *ir.Value
	if splitkv.AppendedRows(p.Op) == 0 { // an appending kernel also writes the caches (appendOperands)
		var err error
		if lse, err = forwardLSE(g, p.Op); err != nil {
			return "", Launch{}, err
		}
	}
	// Few query rows, a long cache: flash-decoding (attention_decode.go); at symbolic sizes over a
	// batch alone, batch its expression (symattn_decode.go), else the CUDA-core template.
	sp, decode := splitkv.Of(p.Op)
	batch, decodeLength := "", false
	if k.Symbolic {
		sp, batch, decode = symDecode(k, p)
		if !decode { // over a symbolic cache length (symattn_decode_len.go)
			sp, decodeLength = symDecodeLength(k, p)
			decode = decodeLength
		}
	}
	if err := symAttnRefused(k, p); err != nil && !decode {
		return "", Launch{}, err
	}
	// f16/bf16 (f32 under tf32) prefill on tensor cores (attention_mma.go), the LSE included
	if attnmma.Takes(p.Op, t.TF32) {
		return attentionMMAKernel(k, p, lse)
	}
	w := &attnWriter{name: k.Name, p: p, ptr: map[*ir.Value]string{}}
	params, args := w.bindAll(k)
	var work *SymWork
	switch {
	case !decode:
		var err error
		if work, err = w.symbolic(k, &params, &args); err != nil { // symattn.go
			return "", Launch{}, err
		}
	case decodeLength:
		if err := w.symDecodeDims(k, &params, &args); err != nil {
			return "", Launch{}, err
		}
	}
	if lse != nil {
		w.lse = w.ptr[lse]
	}
	operands := make([]attnOperand, len(p.Op.Args))
	for i, a := range p.Op.Args {
		if _, ok := splitkv.Appended(p.Op, i); ok {
			continue // appendOperands
		}
		o, err := w.operandOf(a, k)
		if err != nil {
			return "", Launch{}, err
		}
		operands[i] = o
	}
	if err := w.appendOperands(k, operands); err != nil {
		return "", Launch{}, err
	}
	if decode {
		return w.decodeKernel(k, sp, operands, params, args, batch)
	}
	w.body(operands, w.ptr[p.Op])

	var s strings.Builder
	fmt.Fprintf(&s, "// %s: attention, online softmax over %d-key tiles, a warp per query row\n", k.Name, p.Keys)
	fmt.Fprintf(&s, "//   %s\n", g.Format(p.Op))
	fmt.Fprintf(&s, ".visible .entry %s(\n%s\n)\n.maxntid %d, 1, 1\n{\n", k.Name, strings.Join(params, ",\n"), p.Block[0])
	fmt.Fprintf(&s, "\t.shared .align 16 .f32 ktile[%d];\n\t.shared .align 16 .f32 vtile[%d];\n", p.Keys*max(1, p.E), p.Keys*max(1, p.Ev))
	for _, d := range w.decls() {
		s.WriteString("\t" + d + "\n")
	}
	s.WriteString(w.text.String())
	s.WriteString("}\n")
	return s.String(), Launch{Grid: p.Grid, Block: p.Block, Params: args, Work: work}, nil
}

// attnWriter writes the template's PTX with named registers.
type attnWriter struct {
	name   string
	p      AttentionPlan
	ptr    map[*ir.Value]string
	text   strings.Builder
	regs   map[string]string // register → type
	shared map[string]string // tile name → register holding its shared address
	nreg   int
	lse    string   // the address register of the rows' log-sum-exp output (attention_lse), or ""
	sym    *symAttn // the run's sizes of a symbolic kernel (symattn.go), else nil
	// keyGrid: the dk/dv template's grid, a block per (batch, KV head, AttentionGradKeys keys),
	// rather than per (batch, head, attnWarps query rows).
	keyGrid bool
}

func (w *attnWriter) ins(op string, args ...string) {
	fmt.Fprintf(&w.text, "\t%s %s;\n", op, strings.Join(args, ", "))
}

func (w *attnWriter) label(l string) { fmt.Fprintf(&w.text, "%s:\n", l) }

// reg declares a fresh register of type t ("f32", "b32", "b64", "pred", "b16").
func (w *attnWriter) reg(t string) string {
	if w.regs == nil {
		w.regs = map[string]string{}
	}
	w.nreg++
	r := fmt.Sprintf("%%a%d", w.nreg)
	w.regs[r] = t
	return r
}

func (w *attnWriter) decls() []string {
	var ds []string
	for i := 1; i <= w.nreg; i++ {
		r := fmt.Sprintf("%%a%d", i)
		ds = append(ds, fmt.Sprintf(".reg .%s %s;", w.regs[r], r))
	}
	for i := range len(w.ptr) {
		ds = append(ds, fmt.Sprintf(".reg .b64 %%ptr%d;", i))
	}
	return ds
}

func f32Imm(f float64) string { return fmt.Sprintf("0f%08X", math.Float32bits(float32(f))) }

// addr returns base + 4-byte-or-element-size index (a 32-bit element index).
func (w *attnWriter) addr(base, idx string, size int) string {
	wide, a := w.reg("b64"), w.reg("b64")
	w.ins("mul.wide.u32", wide, idx, fmt.Sprint(size))
	w.ins("add.s64", a, base, wide)
	return "[" + a + "]"
}

// loadF32 reads element idx of a buffer of dtype d as f32.
func (w *attnWriter) loadF32(d ir.DType, base, idx string) string {
	f := w.reg("f32")
	switch d {
	case ir.F16:
		h := w.reg("b16")
		w.ins("ld.global.b16", h, w.addr(base, idx, 2))
		w.ins("cvt.f32.f16", f, h)
	case ir.BF16:
		r := w.reg("b32")
		w.ins("ld.global.u16", r, w.addr(base, idx, 2))
		w.ins("shl.b32", r, r, "16")
		w.ins("mov.b32", f, r)
	default:
		w.ins("ld.global.f32", f, w.addr(base, idx, 4))
	}
	return f
}

// storeF32 writes f32 value f as element idx of a buffer of dtype d, rounded once.
func (w *attnWriter) storeF32(d ir.DType, base, idx, f string) {
	switch d {
	case ir.F16, ir.BF16:
		h := w.reg("b16")
		w.ins("cvt.rn."+halfName(d)+".f32", h, f)
		w.ins("st.global.b16", w.addr(base, idx, 2), h)
	default:
		w.ins("st.global.f32", w.addr(base, idx, 4), f)
	}
}

// uimm is an unsigned immediate.
func uimm(n int) string { return fmt.Sprint(n) }

// body writes the kernel: operands q, k, v[, pos][, bias] and the output's address registers.
func (w *attnWriter) body(operands []attnOperand, out string) {
	p, op := w.p, w.p.Op
	d := op.Args[0].Type.DType
	mask := op.Attrs.String("mask", "")
	posOp, posType, biasOp := w.extraOperands(operands)
	tid, lane, b, h, kh, row, last, active := w.blockRows()

	// Visible keys: this warp's row sees keys < lim, the block's last row keys < blim.
	var posv string
	if posOp != nil {
		posv = w.position(*posOp, posType, b)
	}
	lim, blim := w.keyLimit(mask, posv, row), w.keyLimit(mask, posv, last)

	// This lane's q elements and accumulators; each active warp folds the tiles' visible keys
	// into its row.
	rw := w.newRow(d, operands[0], b, h, row, lane, active, "")
	rw.lim = lim
	w.tileLoop(d, operands, 32*attnWarps, tid, "0", blim, w.dimS(), b, kh, func(t0 string) {
		w.foldTile(rw, "", p.Keys, t0, lane, b, d, biasOp)
	})

	// o = acc / l (a row with no visible key is 0/0 = NaN, as the reference).
	w.finishRow(rw, "", lane, b, d, out, rw.acc, rw.l)
	if w.lse != "" {
		w.storeLSE(rw, lane, b)
	}
	w.ins("ret")
}

// blockRows starts a block of the row templates: the thread's index and lane, the block's
// (batch, head) and KV head, this warp's query row, the block's last row and whether this warp's
// row exists.
func (w *attnWriter) blockRows() (tid, lane, b, h, kh, row, last, active string) {
	p := w.p
	u32 := func() string { return w.reg("b32") }
	tid, lane, warp := w.start()
	cta := u32()
	w.ins("mov.u32", cta, "%ctaid.x")
	bh, rt := u32(), u32()
	b, h, kh = u32(), u32(), u32()
	w.ins("div.u32", bh, cta, w.dimRowTiles())
	w.ins("rem.u32", rt, cta, w.dimRowTiles())
	w.ins("div.u32", b, bh, uimm(p.H))
	w.ins("rem.u32", h, bh, uimm(p.H))
	w.ins("div.u32", kh, h, uimm(p.H/p.KVH)) // the KV head within the batch entry
	row0 := u32()
	row, last = u32(), u32()
	w.ins("mul.lo.s32", row0, rt, uimm(attnWarps))
	w.ins("add.s32", row, row0, warp)
	w.ins("add.s32", last, row0, uimm(attnWarps-1))
	w.ins("min.u32", last, last, w.dimLast())
	active = w.reg("pred")
	w.ins("setp.lt.u32", active, row, w.dimL())
	return tid, lane, b, h, kh, row, last, active
}

// tileElem loads this lane's c-th element (lane + 32c) of key j's row of a shared tile of n
// columns, 0 past the row's end.
func (w *attnWriter) tileElem(tile string, n int, j, lane string, c int) string {
	e, ok, sa, x := w.reg("b32"), w.reg("pred"), w.reg("b32"), w.reg("f32")
	w.ins("add.s32", e, lane, uimm(32*c))
	w.ins("setp.lt.u32", ok, e, uimm(n))
	w.ins("mad.lo.s32", sa, j, uimm(n), e)
	w.ins("shl.b32", sa, sa, "2")
	w.ins("add.s32", sa, sa, w.shared[tile])
	w.ins("mov.f32", x, f32Imm(0))
	w.ins("@"+ok+" ld.shared.f32", x, "["+sa+"]")
	return x
}
