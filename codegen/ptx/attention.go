package ptx

import (
	"fmt"
	"math"
	"strings"

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
// work, and the [heads, L, S] scores never exist in memory. Tensor cores (mma.sync), cp.async
// double buffering and split-KV decoding are docs/codegen.md's next steps.

const attnWarps = 4

// attnSharedBytes bounds the two tiles' shared memory (under the 48 KB of static shared memory).
const attnSharedBytes = 40 << 10

// AttentionPlan is the attention template's tiling, shared with any other producer.
type AttentionPlan struct {
	Op                     *ir.Value // the attention op
	B, H, KVH, L, S, E, Ev int
	Keys                   int // keys per shared-memory tile
	RowTiles               int // blocks per (batch, head)
	Grid, Block            [3]int
}

// PlanAttention tiles the kernel's attention op; ok is false when the kernel has none.
func PlanAttention(g *ir.Graph) (p AttentionPlan, ok bool) {
	for _, v := range live(g) {
		if v.Op == ops.AttentionOp {
			p.Op, ok = v, true
		}
	}
	if !ok {
		return p, false
	}
	q, k, v := p.Op.Args[0].Type.Shape, p.Op.Args[1].Type.Shape, p.Op.Args[2].Type.Shape
	p.B, p.H, p.L, p.E = q[0], q[1], q[2], q[3]
	p.KVH, p.S, p.Ev = k[1], k[2], v[3]
	p.Keys = max(1, min(32, attnSharedBytes/(4*max(1, p.E+p.Ev))))
	p.RowTiles = ceilDiv(p.L, attnWarps)
	p.Grid = [3]int{max(1, p.B*p.H*p.RowTiles), 1, 1}
	p.Block = [3]int{32 * attnWarps, 1, 1}
	return p, true
}

// attnOperand is one operand of the attention op as the template reads it: a buffer through
// views, as an offset and a stride per dim (ops.StridedView; 0 for dims of size 1).
type attnOperand struct {
	ptr     string
	off     int
	strides []int
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
func attentionKernel(k Kernel) (string, Launch, error) {
	g := k.Graph
	p, _ := PlanAttention(g)
	for _, v := range live(g) {
		switch v.Op {
		case ops.AttentionOp, ir.OpInput, ir.OpParam, "reshape", "transpose", "broadcast_in_dim", "slice":
		default:
			return "", Launch{}, fmt.Errorf("attention fused with %s is not supported", v.Op)
		}
	}
	if len(g.Outputs) != 1 || g.Outputs[0].Value != p.Op {
		return "", Launch{}, fmt.Errorf("an attention kernel writes the attention op's result alone")
	}
	w := &attnWriter{name: k.Name, p: p, ptr: map[*ir.Value]string{}}
	var args []Arg
	var params []string
	bind := func(kind ArgKind, i int, name string, v *ir.Value) {
		param := fmt.Sprintf("%s_param_%d", k.Name, len(args))
		params = append(params, "\t.param .u64 "+param)
		args = append(args, Arg{Kind: kind, Index: i, Name: name})
		r := fmt.Sprintf("%%ptr%d", len(args)-1)
		w.ins("ld.param.u64", r, "["+param+"]")
		w.ins("cvta.to.global.u64", r, r)
		w.ptr[v] = r
	}
	for i, v := range g.Inputs() {
		bind(ArgInput, i, v.Name, v)
	}
	for i, v := range g.Params() {
		bind(ArgParam, i, v.Name, v)
	}
	bind(ArgOutput, 0, g.Outputs[0].Name, g.Outputs[0].Value)
	operands := make([]attnOperand, len(p.Op.Args))
	for i, a := range p.Op.Args {
		o, err := attentionOperand(a, w.ptr)
		if err != nil {
			return "", Launch{}, err
		}
		operands[i] = o
	}
	if sp, ok := splitkv.Of(p.Op); ok { // few query rows, a long cache: flash-decoding
		return w.decodeKernel(k, sp, operands, params, args)
	}
	w.body(operands, w.ptr[g.Outputs[0].Value])

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
	return s.String(), Launch{Grid: p.Grid, Block: p.Block, Params: args}, nil
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
	d := op.Type.DType
	ce, cev := ceilDiv(p.E, 32), ceilDiv(p.Ev, 32)
	mask := op.Attrs.String("mask", "")
	nextOperand := 3
	var pos, bias *ir.Value
	var posOp, biasOp attnOperand
	if mask == ops.MaskPosition {
		pos, posOp = op.Args[nextOperand], operands[nextOperand]
		nextOperand++
	}
	if op.Attrs.Bool("additive", false) {
		bias, biasOp = op.Args[nextOperand], operands[nextOperand]
	}
	u32 := func() string { return w.reg("b32") }
	pred := func() string { return w.reg("pred") }
	w.shared = map[string]string{}
	for _, t := range []string{"ktile", "vtile"} {
		w.shared[t] = u32()
		w.ins("mov.u32", w.shared[t], t)
	}
	tid, lane, warp, cta := u32(), u32(), u32(), u32()
	w.ins("mov.u32", tid, "%tid.x")
	w.ins("and.b32", lane, tid, "31")
	w.ins("shr.u32", warp, tid, "5")
	w.ins("mov.u32", cta, "%ctaid.x")
	bh, rt, b, h, kh := u32(), u32(), u32(), u32(), u32()
	w.ins("div.u32", bh, cta, uimm(p.RowTiles))
	w.ins("rem.u32", rt, cta, uimm(p.RowTiles))
	w.ins("div.u32", b, bh, uimm(p.H))
	w.ins("rem.u32", h, bh, uimm(p.H))
	w.ins("div.u32", kh, h, uimm(p.H/p.KVH)) // the KV head within the batch entry
	row0, row, last := u32(), u32(), u32()
	w.ins("mul.lo.s32", row0, rt, uimm(attnWarps))
	w.ins("add.s32", row, row0, warp)
	w.ins("add.s32", last, row0, uimm(attnWarps-1))
	w.ins("min.u32", last, last, uimm(p.L-1))
	active := pred()
	w.ins("setp.lt.u32", active, row, uimm(p.L))

	// Visible keys: this warp's row sees keys < lim, the block's last row keys < blim.
	lim, blim := u32(), u32()
	switch mask {
	case ops.MaskCausal:
		w.ins("add.s32", lim, row, "1")
		w.ins("add.s32", blim, last, "1")
	case ops.MaskPosition:
		// pos[b] + row + 1, clamped to [0, S] in 64 bits (pos is untrusted data).
		pv, wide := w.reg("b64"), w.reg("b64")
		if pos.Type.DType == ir.I64 {
			w.ins("ld.global.s64", pv, w.addr(posOp.ptr, w.index(posOp, b), 8))
		} else {
			pr := u32()
			w.ins("ld.global.s32", pr, w.addr(posOp.ptr, w.index(posOp, b), 4))
			w.ins("cvt.s64.s32", pv, pr)
		}
		for _, x := range [][2]string{{row, lim}, {last, blim}} {
			w.ins("cvt.u64.u32", wide, x[0])
			t := w.reg("b64")
			w.ins("add.s64", t, pv, wide)
			w.ins("add.s64", t, t, "1")
			w.ins("max.s64", t, t, "0")
			w.ins("min.s64", t, t, uimm(p.S))
			w.ins("cvt.u32.u64", x[1], t)
		}
	default:
		w.ins("mov.u32", lim, uimm(p.S))
		w.ins("mov.u32", blim, uimm(p.S))
	}
	w.ins("min.u32", lim, lim, uimm(p.S))
	w.ins("min.u32", blim, blim, uimm(p.S))

	// This lane's q elements, pre-scaled by scale·log2 e, and its accumulators.
	c2 := op.Attrs.Float("scale", 1) * math.Log2E
	qrow := u32()
	w.ins("mad.lo.s32", qrow, bh, uimm(p.L), row)
	q := make([]string, ce)
	for c := range q {
		q[c] = w.reg("f32")
		w.ins("mov.f32", q[c], f32Imm(0))
		e, ok := u32(), pred()
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.and.u32", ok, e, uimm(p.E), active)
		skip := fmt.Sprintf("$%s_q%d", w.name, c)
		w.ins("@!"+ok+" bra", skip)
		x := w.loadF32(d, operands[0].ptr, w.index(operands[0], b, h, row, e))
		w.ins("mul.rn.f32", q[c], x, f32Imm(c2))
		w.label(skip)
	}
	acc := make([]string, cev)
	for c := range acc {
		acc[c] = w.reg("f32")
		w.ins("mov.f32", acc[c], f32Imm(0))
	}
	m, l := w.reg("f32"), w.reg("f32")
	w.ins("mov.f32", m, f32Imm(math.Inf(-1)))
	w.ins("mov.f32", l, f32Imm(0))

	// The tiles: t0 is the first key of the tile.
	t0 := u32()
	w.ins("mov.u32", t0, "0")
	loop, done := "$"+w.name+"_tile", "$"+w.name+"_done"
	w.label(loop)
	more := pred()
	w.ins("setp.lt.u32", more, t0, blim)
	w.ins("@!"+more+" bra", done)
	// Load K and V tiles, zero past the last key.
	for _, tile := range []struct {
		name string
		op   attnOperand
		n    int
	}{{"ktile", operands[1], p.E}, {"vtile", operands[2], p.Ev}} {
		if tile.n == 0 {
			continue
		}
		i := u32()
		w.ins("mov.u32", i, tid)
		head, end := fmt.Sprintf("$%s_%s_load", w.name, tile.name), fmt.Sprintf("$%s_%s_loaded", w.name, tile.name)
		w.label(head)
		in := pred()
		w.ins("setp.lt.u32", in, i, uimm(p.Keys*tile.n))
		w.ins("@!"+in+" bra", end)
		j, e, key := u32(), u32(), u32()
		w.ins("div.u32", j, i, uimm(tile.n))
		w.ins("rem.u32", e, i, uimm(tile.n))
		w.ins("add.s32", key, t0, j)
		x := w.reg("f32")
		w.ins("mov.f32", x, f32Imm(0))
		inKey := pred()
		w.ins("setp.lt.u32", inKey, key, uimm(p.S))
		skip := head + "_zero"
		w.ins("@!"+inKey+" bra", skip)
		y := w.loadF32(d, tile.op.ptr, w.index(tile.op, b, kh, key, e))
		w.ins("mov.f32", x, y)
		w.label(skip)
		sa := u32()
		w.ins("shl.b32", sa, i, "2")
		w.ins("add.s32", sa, sa, w.shared[tile.name])
		w.ins("st.shared.f32", "["+sa+"]", x)
		w.ins("add.s32", i, i, uimm(32*attnWarps))
		w.ins("bra.uni", head)
		w.label(end)
	}
	w.ins("bar.sync", "0")

	// Each active warp folds the tile's visible keys into its row.
	skipRow := "$" + w.name + "_rowdone"
	w.ins("@!"+active+" bra.uni", skipRow)
	j, key := u32(), u32()
	w.ins("mov.u32", j, "0")
	keyLoop, keyDone := "$"+w.name+"_key", "$"+w.name+"_keydone"
	w.label(keyLoop)
	w.ins("add.s32", key, t0, j)
	kin := pred()
	w.ins("setp.lt.u32", kin, j, uimm(p.Keys))
	w.ins("@!"+kin+" bra.uni", keyDone)
	w.ins("setp.lt.u32", kin, key, lim)
	w.ins("@!"+kin+" bra.uni", keyDone)
	// s = Σ_e q[e]·k[key][e] over the warp.
	s := w.reg("f32")
	w.ins("mov.f32", s, f32Imm(0))
	for c := range q {
		w.ins("fma.rn.f32", s, q[c], w.tileElem("ktile", p.E, j, lane, c), s)
	}
	for off := 16; off >= 1; off /= 2 {
		o := w.reg("f32")
		w.ins("shfl.sync.bfly.b32", o, s, uimm(off), "0x1f", "0xffffffff")
		w.ins("add.rn.f32", s, s, o)
	}
	if bias != nil {
		x := w.loadF32(d, biasOp.ptr, w.index(biasOp, b, h, row, key))
		w.ins("fma.rn.f32", s, x, f32Imm(math.Log2E), s)
	}
	// Online softmax in base 2: m' = max(m, s); base = m' unless it is -inf (nothing seen yet).
	mn, base, corr, pr, t := w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("f32"), w.reg("f32")
	w.ins("max.f32", mn, m, s)
	ninf := pred()
	w.ins("setp.eq.f32", ninf, mn, f32Imm(math.Inf(-1)))
	w.ins("selp.f32", base, f32Imm(0), mn, ninf)
	w.ins("sub.rn.f32", t, m, base)
	w.ins("ex2.approx.f32", corr, t)
	w.ins("sub.rn.f32", t, s, base)
	w.ins("ex2.approx.f32", pr, t)
	w.ins("fma.rn.f32", l, l, corr, pr)
	w.ins("mov.f32", m, mn)
	for c := range acc {
		vv := w.tileElem("vtile", p.Ev, j, lane, c)
		w.ins("mul.rn.f32", acc[c], acc[c], corr)
		w.ins("fma.rn.f32", acc[c], pr, vv, acc[c])
	}
	w.ins("add.s32", j, j, "1")
	w.ins("bra.uni", keyLoop)
	w.label(keyDone)
	w.label(skipRow)
	w.ins("bar.sync", "0")
	w.ins("add.s32", t0, t0, uimm(p.Keys))
	w.ins("bra.uni", loop)
	w.label(done)

	// o = acc / l (a row with no visible key is 0/0 = NaN, as the reference).
	end := "$" + w.name + "_end"
	w.ins("@!"+active+" bra.uni", end)
	for c := range acc {
		e, ok := u32(), pred()
		w.ins("add.s32", e, lane, uimm(32*c))
		w.ins("setp.lt.u32", ok, e, uimm(p.Ev))
		skip := fmt.Sprintf("$%s_o%d", w.name, c)
		w.ins("@!"+ok+" bra", skip)
		o := w.reg("f32")
		w.ins("div.rn.f32", o, acc[c], l)
		idx := u32()
		w.ins("mad.lo.s32", idx, qrow, uimm(p.Ev), e)
		w.storeF32(d, out, idx, o)
		w.label(skip)
	}
	w.label(end)
	w.ins("ret")
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
