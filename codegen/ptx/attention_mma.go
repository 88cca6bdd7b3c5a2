package ptx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The tensor-core attention template (FlashAttention-2's forward on mma.sync) for f16 and bf16.
//
// A block of 4 warps owns 64 query rows of one (batch, head), 16 per warp. A warp keeps its Q
// rows as mma A fragments in registers for the whole kernel. K and V stream through shared
// memory in tiles of 64 keys (rows padded by 16 bytes, so ldmatrix's 8 row addresses fall in 8
// bank groups), copied by cp.async in FlashAttention-2's overlap: V of tile j is in flight while
// S = Q·Kᵀ of tile j runs, K of tile j+1 while O += P·V of tile j runs. S is 8 mma tiles of
// 16×8 f32 per warp (m16n8k16; K read with ldmatrix), and each thread holds two rows of it (g
// and g+8 of its warp's 16, g = lane/4) whose maxima and sums combine across the lane quad with
// shfl. The probabilities P are rounded to the operands' dtype in registers, where the S
// accumulators' layout is already that of P's A fragments, and multiply V (ldmatrix.trans).
//
// Tiles past the block's last visible key are never loaded; a warp whose rows see no key of a
// tile skips its products; masking (causal, position, the last ragged tile) runs only on the
// tiles a warp's first row does not see whole. Query head h reads KV head h/(H/KVH) through
// the operands' strides, so grouped and multi-query attention copy nothing.
//
// f32 attention under the compiler's tf32 option (Target.TF32) runs the same template on
// mma.sync m16n8k8 .tf32 (attnmma.FitsTF32): Q, K and V stay f32 in memory and shared memory
// (tiles of attnmma.KeysTF32 keys, so two tiles of 4-byte rows fit static shared memory), and
// every fragment, P's included, is rounded to tf32 with cvt.rna.tf32.f32 before its mma; the
// accumulators, the online softmax and the output stay f32. A tf32 A fragment holds columns t
// and t+4 of the quad's lane t where the S accumulators hold 2t and 2t+1: P·V reads key 2t
// where the product's k index is t and 2t+1 where it is t+4, a permutation of the summed keys
// applied to V's rows (read word by word: ldmatrix cannot transpose 32-bit elements), so P's
// fragments are S's registers without a shuffle.
const (
	attnMMARows = attnmma.Rows
	attnMMAKeys = attnmma.Keys
)

// attnMMA writes the template.
type attnMMA struct {
	b    *builder
	a    ia
	p    AttentionPlan
	ops  []attnOperand
	tid  string // %tid.x
	eb   int    // operand bytes: 2, or 4 for f32 on tf32 tensor cores
	keys int    // keys per K/V tile
	lse  string // the address register of the rows' log-sum-exp output (attention_lse), or ""
	ptr  map[*ir.Value]string
	sym  *symMMA // the run's sizes of a symbolic kernel (symattn_mma.go), else nil
}

// attentionMMAKernel emits the tensor-core template for a kernel attentionKernel checked; lse is
// its attention_lse output (forwardLSE), or nil.
func attentionMMAKernel(k Kernel, p AttentionPlan, lse *ir.Value) (string, Launch, error) {
	g := k.Graph
	b := newBuilder(k.Name)
	w := &attnMMA{b: b, a: ia{b}, p: p, eb: 2, keys: attnMMAKeys}
	kind := "tensor cores"
	if p.Op.Type.DType == ir.F32 {
		w.eb, w.keys, kind = 4, attnmma.KeysTF32, "tf32 tensor cores"
	}
	// the outputs: the result and, where the kernel has it, the LSE (forwardLSE)
	ptr, args, operands, err := bindMMA(b, k, p.Op)
	if err != nil {
		return "", Launch{}, err
	}
	w.ops, w.ptr = operands, ptr
	work, err := w.symbolic(k, &args) // symattn_mma.go
	if err != nil {
		return "", Launch{}, err
	}
	if lse != nil {
		w.lse = ptr[lse]
	}
	b.comment = []string{
		fmt.Sprintf("%s: attention on %s (mma.sync), %d query rows per block, %d-key K/V tiles by cp.async", k.Name, kind, attnMMARows, w.keys),
		"  " + g.Format(p.Op),
	}
	b.perf = fmt.Sprintf(".maxntid %d, 1, 1", attnmma.Threads)
	w.body(ptr[p.Op])
	return b.text(), Launch{Grid: [3]int{attnmma.Blocks(p.Op), 1, 1}, Block: [3]int{attnmma.Threads, 1, 1}, Params: args, Work: work}, nil
}

// bindMMA declares a .u64 parameter per buffer of the kernel (inputs, parameters, outputs, in
// that order), each loaded into an address register of ptr, and resolves op's operands.
func bindMMA(b *builder, k Kernel, op *ir.Value) (ptr map[*ir.Value]string, args []Arg, operands []attnOperand, err error) {
	g := k.Graph
	ptr = map[*ir.Value]string{}
	bind := func(kind ArgKind, i int, name string, v *ir.Value) {
		ptr[v] = b.globalParam(fmt.Sprintf("%s_param_%d", k.Name, len(args)))
		args = append(args, Arg{Kind: kind, Index: i, Name: name})
	}
	eachBuffer(g, bind)
	for _, a := range op.Args {
		o, err := attentionOperand(a, ptr)
		if err != nil {
			return nil, nil, nil, err
		}
		operands = append(operands, o)
	}
	return ptr, args, operands, nil
}

// kvTile is K's or V's shared tile and its copy map: each thread copies chunks of chunk
// elements (16 bytes, 4 bytes, or one 16-bit element by ld/st; by cp.async but the last) of column col0 in
// rows row0, row0+rpp, …; threads past rpp rows of chunks idle.
type kvTile struct {
	op         attnOperand
	n, rowH    int // head dim, elements per shared row
	chunk, rpp int
	sh         string // shared base address
	row0       string // this thread's first row
	src        string // global address of (row0, col0) of the current tile
	dst        string // shared address of (row0, col0)
}

func (w *attnMMA) tile(name string, op attnOperand, n int, b0, kh string) *kvTile {
	b, a := w.b, w.a
	eb := w.eb
	t := &kvTile{op: op, n: n, rowH: n + 16/eb}
	switch {
	case rowsAligned(op, 16/eb):
		t.chunk = 16 / eb
	case rowsAligned(op, 4/eb):
		t.chunk = 4 / eb
	default:
		t.chunk = 1
	}
	perRow := n / t.chunk
	t.rpp = max(1, 32*attnWarps/perRow)
	t.sh = b.reg(rU32)
	b.ins("mov.u32", t.sh, b.sharedArray(name, w.keys*t.rowH*eb, 16))
	tid := w.tid
	t.row0 = a.reg(a.div(tid, perRow))
	col0 := a.mul(a.rem(tid, perRow), t.chunk)
	t.dst = a.reg(a.add(t.sh, a.mul(a.mad(t.row0, t.rowH, col0), eb)))
	// The first tile's (row0, col0): off + b·s0 + kh·s1 + row0·s2 + col0.
	el := w.madSt(b0, op, 0, w.offOf(op))
	el = w.madSt(kh, op, 1, el)
	el = a.add(w.madSt(t.row0, op, 2, el), col0)
	t.src = b.reg(rU64)
	o := b.reg(rU64)
	b.ins("mul.wide.u32", o, a.reg(el), imm(eb))
	b.ins("add.s64", t.src, op.ptr, o)
	return t
}

// rowsAligned reports whether every row of a [B, H, rows, cols] operand starts at a multiple of m
// elements (its offset and its first three strides are multiples of m).
func rowsAligned(o attnOperand, m int) bool {
	if o.off%m != 0 {
		return false
	}
	for _, st := range o.strides[:3] {
		if st%m != 0 {
			return false
		}
	}
	return true
}

// issue copies the tile of keys [t0, t0+keys) (zeros past S) and advances the source to the
// next tile; left is S − t0.
func (w *attnMMA) issue(t *kvTile, left string) {
	b, eb, keys := w.b, w.eb, w.keys
	for i := 0; i*t.rpp < keys; i++ {
		row := i * t.rpp
		in := "" // the copy lies in the tile (threads past rpp rows of chunks idle)
		if t.rpp*t.n/t.chunk < 32*attnWarps || row+t.rpp > keys {
			in = b.reg(rPred)
			b.ins("setp.lt.u32", in, t.row0, imm(min(t.rpp, keys-row)))
		}
		lim := left
		if row > 0 {
			lim = b.reg(rU32)
			b.ins("sub.s32", lim, left, imm(row))
		}
		ok := b.reg(rPred)
		b.ins("setp.lt.s32", ok, t.row0, lim)
		src := b.reg(rU64)
		if row > 0 && w.rowStep(src, t.src, t.op, row) {
			b.ins("selp.b64", src, src, t.op.ptr, ok)
		} else if off := eb * row * t.op.strides[2]; off != 0 {
			b.ins("add.s64", src, t.src, imm(off))
			b.ins("selp.b64", src, src, t.op.ptr, ok) // a valid address for the zero-size copies
		} else {
			b.ins("selp.b64", src, t.src, t.op.ptr, ok)
		}
		dst := fmt.Sprintf("[%s+%d]", t.dst, eb*row*t.rowH)
		if t.chunk == 1 && eb == 2 {
			h, load := b.reg(rB16), ok
			if in != "" { // an idle thread loads nothing either
				load = b.reg(rPred)
				b.ins("and.pred", load, ok, in)
			}
			b.ins("mov.b16", h, "0")
			b.guarded(load, "ld.global.b16", h, "["+src+"]")
			w.maybe(in, "st.shared.b16", dst, h)
			continue
		}
		bytes := b.reg(rU32)
		b.ins("selp.b32", bytes, imm(eb*t.chunk), "0", ok)
		kind := "ca"
		if eb*t.chunk == 16 {
			kind = "cg"
		}
		w.maybe(in, "cp.async."+kind+".shared.global", dst, "["+src+"]", imm(eb*t.chunk), bytes)
	}
	if !w.rowStep(t.src, t.src, t.op, keys) {
		b.ins("add.s64", t.src, t.src, imm(eb*keys*t.op.strides[2]))
	}
	b.ins("cp.async.commit_group")
}

// maybe emits an instruction guarded by pred, or unguarded when pred is "".
func (w *attnMMA) maybe(pred, op string, args ...string) {
	if pred == "" {
		w.b.ins(op, args...)
		return
	}
	w.b.guarded(pred, op, args...)
}

// limit emits the number of keys query row row sees: S, row+1 or pos[b]+row+1, within [0, S].
func (w *attnMMA) limit(row, posv string) string {
	b := w.b
	lim := b.reg(rU32)
	switch w.p.Op.Attrs.String("mask", "") {
	case ops.MaskCausal:
		b.ins("add.s32", lim, row, "1")
		b.ins("min.u32", lim, lim, w.szS())
	case ops.MaskPosition:
		// In 64 bits: pos is untrusted data.
		wide, t := b.reg(rU64), b.reg(rU64)
		b.ins("cvt.u64.u32", wide, row)
		b.ins("add.s64", t, posv, wide)
		b.ins("add.s64", t, t, "1")
		b.ins("max.s64", t, t, "0")
		b.ins("min.s64", t, t, w.szS64())
		b.ins("cvt.u32.u64", lim, t)
	default:
		b.ins("mov.u32", lim, w.szS())
	}
	return lim
}

func (w *attnMMA) body(out string) {
	b, a, p := w.b, w.a, w.p
	eb, keys := w.eb, w.keys
	tf32 := eb == 4
	d := p.Op.Type.DType
	half := halfName(d)
	ms := mmaShapeOf(d)
	inst := ms.inst
	mask := p.Op.Attrs.String("mask", "")
	nextOperand := 3
	var posOp, biasOp *attnOperand
	if mask == ops.MaskPosition {
		posOp = &w.ops[nextOperand]
		nextOperand++
	}
	if p.Op.Attrs.Bool("additive", false) {
		biasOp = &w.ops[nextOperand]
	}
	_, lane, warp, cta := w.threadIDs()
	// Blocks run the last row tiles first: under a causal or position mask they see the most
	// keys, and the short ones fill the tail (FlashAttention-2's order).
	bh, rt := w.blockTile(cta)
	bIdx := a.reg(a.div(bh, p.H))
	h := a.reg(a.rem(bh, p.H))
	kh := a.reg(a.div(h, p.H/p.KVH))
	g, tq := a.reg(a.div(lane, 4)), a.reg(a.rem(lane, 4))
	blockRow := a.reg(a.mul(rt, attnMMARows))
	warpRow := a.reg(a.mad(warp, 16, blockRow))
	rowA := a.reg(a.add(warpRow, g))
	rowB := a.reg(a.add(rowA, imm(8)))

	var posv string
	if posOp != nil {
		posv = b.reg(rU64)
		switch d := p.Op.Args[3].Type.DType; d {
		case ir.I64:
			b.ins("ld.global.s64", posv, w.elemAddr(*posOp, []string{bIdx}, 8))
		case ir.U8:
			r := b.reg(rU32)
			b.ins("ld.global.u8", r, w.elemAddr(*posOp, []string{bIdx}, 1))
			b.ins("cvt.u64.u32", posv, r)
		default: // i32, i8: sign-extended
			r := b.reg(rU32)
			b.ins("ld.global."+map[ir.DType]string{ir.I32: "s32", ir.I8: "s8"}[d], r, w.elemAddr(*posOp, []string{bIdx}, d.Size()))
			b.ins("cvt.s64.s32", posv, r)
		}
	}
	limA, limB := w.limit(rowA, posv), w.limit(rowB, posv)
	warpFirst := w.limit(warpRow, posv) // the warp's first row sees keys < warpFirst
	// The warp's last row sees keys < warpLast (0 for a warp past L, which skips every product);
	// the block's last row below L keys < blockLast.
	warpLast := w.limit(a.reg(a.add(warpRow, imm(15))), posv)
	past := b.reg(rPred)
	b.ins("setp.ge.u32", past, warpRow, w.szL())
	b.ins("selp.b32", warpLast, "0", warpLast, past)
	lastRow := b.reg(rU32)
	b.ins("add.s32", lastRow, blockRow, imm(attnMMARows-1))
	b.ins("min.u32", lastRow, lastRow, w.szLast())
	blockLast := w.limit(lastRow, posv)

	// Q's A fragments: ks-th 16 columns, registers (row g, k 2t), (g+8, 2t), (g, 2t+8), (g+8, 2t+8);
	// tf32's ks-th 8 columns, (g, t), (g+8, t), (g, t+4), (g+8, t+4).
	qo := w.ops[0]
	qf := make([][4]string, p.E/ms.kStep)
	{
		qBH := w.madSt(h, qo, 1, w.madSt(bIdx, qo, 0, w.offOf(qo)))
		colT := 2 // the thread's first column is 2t, or t for tf32
		if tf32 {
			colT = 1
		}
		col := a.mul(tq, colT*qo.strides[3])
		var rowAddr [2]string
		var ok [2]string
		for i, row := range []string{rowA, rowB} {
			ok[i] = b.reg(rPred)
			b.ins("setp.lt.u32", ok[i], row, w.szL())
			el := a.add(w.madSt(w.clampL(row), qo, 2, qBH), col)
			rowAddr[i] = b.reg(rU64)
			o := b.reg(rU64)
			b.ins("mul.wide.u32", o, a.reg(el), imm(eb))
			b.ins("add.s64", rowAddr[i], qo.ptr, o)
		}
		if tf32 {
			w.tf32Q(qf, rowAddr, ok)
		} else {
			w.halfQ(qf, rowAddr, ok)
		}
	}

	// Bias rows' addresses at key 2t of the first tile.
	var biasAddr [2]string
	if biasOp != nil {
		bo := *biasOp
		bBH := w.madSt(h, bo, 1, w.madSt(bIdx, bo, 0, w.offOf(bo)))
		for i, row := range []string{rowA, rowB} {
			el := a.add(w.madSt(w.clampL(row), bo, 2, bBH), a.mul(tq, 2*bo.strides[3]))
			biasAddr[i] = b.reg(rU64)
			o := b.reg(rU64)
			b.ins("mul.wide.u32", o, a.reg(el), imm(eb))
			b.ins("add.s64", biasAddr[i], bo.ptr, o)
		}
	}

	kt := w.tile("ktile", w.ops[1], p.E, bIdx, kh)
	vt := w.tile("vtile", w.ops[2], p.Ev, bIdx, kh)

	// ldmatrix lane addresses (lane l serves matrix l/8, row l%8). K (B operand, stored
	// [key][e]): matrices (key, e) = (0,0), (0,8), (8,0), (8,8); V (stored [key][ev], .trans):
	// matrices (key, ev) = (0,0), (8,0), (0,8), (8,8).
	// tf32's K matrices are 8 keys × 4 words alike, (key, e) = (0,0), (0,4), (8,0), (8,4); its V
	// fragments are words (key 2t, ev g) and (2t+1, g), read one by one.
	q8, r8 := a.div(lane, 8), a.rem(lane, 8)
	kAddr := a.reg(a.add(kt.sh, a.mul(a.mad(a.add(a.mul(a.div(q8, 2), 8), r8), kt.rowH, a.mul(a.rem(q8, 2), 16/eb)), eb)))
	var vAddr string
	if tf32 {
		vAddr = a.reg(a.add(vt.sh, a.mul(a.mad(a.mul(tq, 2), vt.rowH, g), eb)))
	} else {
		vAddr = a.reg(a.add(vt.sh, a.mul(a.mad(a.add(a.mul(a.rem(q8, 2), 8), r8), vt.rowH, a.mul(a.div(q8, 2), 8)), 2)))
	}

	nO := p.Ev / 8
	acc := make([]string, 4*nO)
	for i := range acc {
		acc[i] = b.reg(rF32)
		b.ins("mov.f32", acc[i], immF32(0))
	}
	var m, l [2]string
	for i := range 2 {
		m[i], l[i] = b.reg(rF32), b.reg(rF32)
		b.ins("mov.f32", m[i], immF32(math.Inf(-1)))
		b.ins("mov.f32", l[i], immF32(0))
	}
	// With a positive scale the scores stay unscaled (their maxima are the same keys') and the
	// exponent's FFMA applies scale·log2 e: s·c2 − m·c2. Otherwise (and where scale·log2 e or
	// the bias's 1/scale would leave f32's normal range) they are scaled first.
	scale := p.Op.Attrs.Float("scale", 1)
	c2, k2 := scale*math.Log2E, 1.0
	fold := scale >= 1e-30 && scale <= 1e30
	if fold {
		k2 = c2
	}

	t0 := b.reg(rU32)
	b.ins("mov.u32", t0, "0")
	left := b.reg(rU32)
	b.ins("mov.u32", left, w.szS())
	loop, done := b.label("attn_tile"), b.label("attn_done")
	none := b.reg(rPred)
	b.ins("setp.eq.u32", none, blockLast, "0")
	b.braIf(none, done)
	w.issue(kt, left)
	b.place(loop)
	b.ins(`.pragma "nounroll"`)
	w.issue(vt, left)
	b.ins("cp.async.wait_group", "1") // K of this tile
	b.ins("bar.sync", "0")
	busy := b.reg(rPred) // the warp's last row sees a key of this tile
	b.ins("setp.lt.u32", busy, t0, warpLast)
	skipS := b.label("attn_skip_s")
	b.braIf("!"+busy, skipS)

	// S = Q·Kᵀ: n-tile j holds keys t0+8j…, thread values (row g, key 2t+c) and (g+8, 2t+c).
	s := make([]string, 4*keys/8)
	for i := range s {
		s[i] = b.reg(rF32)
		b.ins("mov.f32", s[i], immF32(0))
	}
	for ks := range p.E / ms.kStep {
		for np := range keys / 16 {
			kf := []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
			b.ins(ldmatrix(false), "{"+joinRegs(kf)+"}", fmt.Sprintf("[%s+%d]", kAddr, eb*(16*np*kt.rowH+ms.kStep*ks)))
			if tf32 {
				w.roundTF32(kf)
			}
			for x := range 2 {
				c := s[4*(2*np+x) : 4*(2*np+x)+4]
				b.ins(inst, "{"+joinRegs(c)+"}", "{"+joinRegs(qf[ks][:])+"}", "{"+kf[2*x]+", "+kf[2*x+1]+"}", "{"+joinRegs(c)+"}")
			}
		}
	}
	if !fold {
		for _, r := range s {
			b.ins("mul.rn.f32", r, r, immF32(c2))
		}
	}
	if biasOp != nil {
		// scores += bias·log2 e (bias/scale unscaled) for keys < S (rows past L read row L−1).
		bk := math.Log2E
		if fold {
			bk = 1 / scale
		}
		kLeft := b.reg(rU32)
		b.ins("sub.s32", kLeft, left, a.reg(a.mul(tq, 2)))
		for j := range keys / 8 {
			for c := range 4 {
				ok := b.reg(rPred)
				b.ins("setp.gt.s32", ok, kLeft, imm(8*j+c%2))
				f := b.reg(rF32)
				at := fmt.Sprintf("[%s+%d]", biasAddr[c/2], eb*(8*j+c%2)*biasOp.strides[3])
				if tf32 {
					b.ins("mov.f32", f, immF32(0))
					b.guarded(ok, "ld.global.f32", f, at)
				} else {
					hv := b.reg(rB16)
					b.ins("mov.b16", hv, "0")
					b.guarded(ok, "ld.global.b16", hv, at)
					w.toF32(f, hv, d)
				}
				b.ins("fma.rn.f32", s[4*j+c], f, immF32(bk), s[4*j+c])
			}
		}
	}
	// Hide keys a row does not see, where the warp's first row does not see the whole tile.
	whole := b.reg(rPred)
	end := b.reg(rU32)
	b.ins("add.s32", end, t0, imm(keys))
	b.ins("setp.le.u32", whole, end, warpFirst)
	masked := b.label("attn_masked")
	b.braIf(whole, masked)
	for i, lim := range []string{limA, limB} {
		rel := b.reg(rU32) // keys this thread's first column may go up to
		b.ins("sub.s32", rel, lim, t0)
		b.ins("sub.s32", rel, rel, a.reg(a.mul(tq, 2)))
		for j := range keys / 8 {
			for c := range 2 {
				ok := b.reg(rPred)
				b.ins("setp.gt.s32", ok, rel, imm(8*j+c))
				r := s[4*j+2*i+c]
				b.ins("selp.f32", r, r, immF32(math.Inf(-1)), ok)
			}
		}
	}
	b.place(masked)

	// Online softmax in base 2, per row: m' = max(m, the tile's max over the quad); base =
	// m'·k2 unless m' is −inf (nothing seen yet); p = 2^(s·k2 − base); O and l scale by
	// 2^(m·k2 − base).
	pf := make([][4]string, keys/ms.kStep)
	for i := range 2 {
		mx := b.reg(rF32)
		b.ins("mov.f32", mx, m[i])
		for j := range keys / 8 {
			for c := range 2 {
				b.ins("max.f32", mx, mx, s[4*j+2*i+c])
			}
		}
		for _, off := range []string{"1", "2"} {
			o := b.reg(rF32)
			b.ins("shfl.sync.bfly.b32", o, mx, off, "0x1f", "0xffffffff")
			b.ins("max.f32", mx, mx, o)
		}
		ninf := b.reg(rPred)
		nb, corr, t := b.reg(rF32), b.reg(rF32), b.reg(rF32)
		b.ins("setp.eq.f32", ninf, mx, immF32(math.Inf(-1)))
		b.ins("mul.rn.f32", nb, mx, immF32(-k2))
		b.ins("selp.f32", nb, immF32(0), nb, ninf)
		b.ins("fma.rn.f32", t, m[i], immF32(k2), nb)
		b.ins("ex2.approx.ftz.f32", corr, t)
		b.ins("mov.f32", m[i], mx)
		sum := b.reg(rF32)
		b.ins("mov.f32", sum, immF32(0))
		for j := range keys / 8 {
			for c := range 2 {
				r := s[4*j+2*i+c]
				b.ins("fma.rn.f32", r, r, immF32(k2), nb)
				b.ins("ex2.approx.ftz.f32", r, r)
				b.ins("add.rn.f32", sum, sum, r)
			}
		}
		b.ins("fma.rn.f32", l[i], l[i], corr, sum)
		for n := range nO {
			for c := range 2 {
				r := acc[4*n+2*i+c]
				b.ins("mul.rn.f32", r, r, corr)
			}
		}
	}
	// P's A fragments: keys 16kk… are S tiles 2kk and 2kk+1, registers (g, 2t), (g+8, 2t),
	// (g, 2t+8), (g+8, 2t+8). tf32's keys 8kk… are S tile kk: (g, 2t), (g+8, 2t), (g, 2t+1),
	// (g+8, 2t+1) rounded, in the slots of k t, t, t+4, t+4.
	for kk := range pf {
		if tf32 {
			for j := range 4 {
				pf[kk][j] = b.reg(rU32)
				b.ins("cvt.rna.tf32.f32", pf[kk][j], s[4*kk+2*(j%2)+j/2])
			}
			continue
		}
		for j := range 4 {
			tile := 2*kk + j/2
			c := 4*tile + 2*(j%2)
			pf[kk][j] = b.reg(rU32)
			b.ins("cvt.rn."+half+"x2.f32", pf[kk][j], s[c+1], s[c])
		}
	}
	b.place(skipS)
	b.ins("bar.sync", "0") // every warp is done with K
	next := b.reg(rU32)
	b.ins("add.s32", next, t0, imm(keys))
	b.ins("sub.s32", left, left, imm(keys))
	more := b.reg(rPred)
	b.ins("setp.lt.u32", more, next, blockLast)
	noK := b.label("attn_no_k")
	b.braIf("!"+more, noK)
	w.issue(kt, left)
	haveK := b.label("attn_have_k")
	b.bra(haveK)
	b.place(noK)
	b.ins("cp.async.commit_group") // an empty group keeps the count of groups in flight
	b.place(haveK)
	b.ins("cp.async.wait_group", "1") // V of this tile
	b.ins("bar.sync", "0")
	skipPV := b.label("attn_skip_pv")
	b.braIf("!"+busy, skipPV)
	// O += P·V: V's x4 .trans covers keys 16kk… and output columns 16nj…
	for kk := range pf {
		if tf32 {
			w.tf32PV(acc, pf[kk], vAddr, eb*8*kk*vt.rowH, vt.rowH)
			continue
		}
		mmaTransB(b, inst, acc, pf[kk], vAddr, kk, vt.rowH, p.Ev)
	}
	b.place(skipPV)
	b.ins("bar.sync", "0") // every warp is done with V
	if biasOp != nil {
		for _, r := range biasAddr {
			b.ins("add.s64", r, r, imm(eb*keys*biasOp.strides[3]))
		}
	}
	b.ins("mov.u32", t0, next)
	b.braIf(more, loop)
	b.place(done)
	w.afterLoop() // symattn_mma.go

	// O = acc · (1/l), l summed over the quad: l is 0 (a row that saw no key: 0·inf = NaN, as the
	// reference) or at least 1 (the row's maximum adds 2^0), where rcp.approx's error is 1 ulp.
	for i, row := range []string{rowA, rowB} {
		for _, off := range []string{"1", "2"} {
			o := b.reg(rF32)
			b.ins("shfl.sync.bfly.b32", o, l[i], off, "0x1f", "0xffffffff")
			b.ins("add.rn.f32", l[i], l[i], o)
		}
		ok := b.reg(rPred)
		b.ins("setp.lt.u32", ok, row, w.szL())
		rowEl := w.outRow(bh, row)
		el := a.mad(rowEl, p.Ev, a.mul(tq, 2))
		addr := b.reg(rU64)
		o := b.reg(rU64)
		b.ins("mul.wide.u32", o, a.reg(el), imm(eb))
		b.ins("add.s64", addr, out, o)
		inv := b.reg(rF32)
		b.ins("rcp.approx.f32", inv, l[i])
		for n := range nO {
			x, y := b.reg(rF32), b.reg(rF32)
			b.ins("mul.rn.f32", x, acc[4*n+2*i], inv)
			b.ins("mul.rn.f32", y, acc[4*n+2*i+1], inv)
			if tf32 {
				b.guarded(ok, "st.global.v2.f32", fmt.Sprintf("[%s+%d]", addr, 32*n), "{"+x+", "+y+"}")
				continue
			}
			pk := b.reg(rU32)
			b.ins("cvt.rn."+half+"x2.f32", pk, y, x)
			b.guarded(ok, "st.global.b32", fmt.Sprintf("[%s+%d]", addr, 16*n), pk)
		}
		if w.lse != "" {
			w.storeLSE(m[i], l[i], k2, tq, ok, rowEl)
		}
	}
}

// storeLSE writes a row's log-sum-exp from the quad's first thread where ok (the row is below L):
// (m·k2 + log₂ l)·ln 2, the CUDA-core template's storeLSE with the scores' max m in the units the
// exponent scales by k2 (k2 > 0), l the quad's sum; −inf for a row with no visible key (m = −inf,
// l = 0). el is the row's index in the [B, H, L] output.
func (w *attnMMA) storeLSE(m, l string, k2 float64, tq, ok, el string) {
	b, a := w.b, w.a
	st := b.reg(rPred)
	b.ins("setp.eq.and.u32", st, tq, "0", ok)
	x := b.reg(rF32)
	b.ins("lg2.approx.f32", x, l)
	b.ins("fma.rn.f32", x, m, immF32(k2), x)
	b.ins("mul.rn.f32", x, x, immF32(math.Ln2))
	addr, o := b.reg(rU64), b.reg(rU64)
	b.ins("mul.wide.u32", o, a.reg(el), "4")
	b.ins("add.s64", addr, w.lse, o)
	b.guarded(st, "st.global.f32", "["+addr+"]", x)
}

// threadIDs emits the thread's index (kept in w.tid), lane, warp and block index.
func (w *attnMMA) threadIDs() (tid, lane, warp, cta string) {
	b := w.b
	w.tid = b.reg(rU32)
	b.ins("mov.u32", w.tid, "%tid.x")
	lane, warp, cta = b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("and.b32", lane, w.tid, "31")
	b.ins("shr.u32", warp, w.tid, "5")
	b.ins("mov.u32", cta, "%ctaid.x")
	return w.tid, lane, warp, cta
}

// elemAddr is the address of an operand's element at idx (missing trailing indices 0).
func (w *attnMMA) elemAddr(o attnOperand, idx []string, size int) string {
	a, b := w.a, w.b
	el := w.offOf(o)
	for d, x := range idx {
		el = w.madSt(x, o, d, el)
	}
	r, wide := b.reg(rU64), b.reg(rU64)
	b.ins("mul.wide.u32", wide, a.reg(el), imm(size))
	b.ins("add.s64", r, o.ptr, wide)
	return "[" + r + "]"
}

// toF32 widens a 16-bit image h of dtype d into f.
func (w *attnMMA) toF32(f, h string, d ir.DType) {
	if d == ir.F16 {
		w.b.ins("cvt.f32.f16", f, h)
		return
	}
	r := w.b.reg(rU32)
	w.b.ins("cvt.u32.u16", r, h)
	w.b.ins("shl.b32", r, r, "16")
	w.b.ins("mov.b32", f, r)
}

// tf32Q loads Q's tf32 A fragments: ks-th 8 columns, registers (row g, k t), (g+8, t), (g, t+4),
// (g+8, t+4) rounded to tf32; rowAddr[i] is column t of rows g and g+8, ok[i] that the row is
// below L.
func (w *attnMMA) tf32Q(qf [][4]string, rowAddr, ok [2]string) {
	b, st := w.b, w.ops[0].strides[3]
	for ks := range qf {
		for j := range 4 {
			f := b.reg(rF32)
			b.ins("mov.f32", f, immF32(0))
			b.guarded(ok[j%2], "ld.global.f32", f, fmt.Sprintf("[%s+%d]", rowAddr[j%2], 4*(8*ks+4*(j/2))*st))
			qf[ks][j] = b.reg(rU32)
			b.ins("cvt.rna.tf32.f32", qf[ks][j], f)
		}
	}
}

// roundTF32 rounds fragment registers holding f32 images to tf32 (nearest, ties away) in place.
func (w *attnMMA) roundTF32(regs []string) {
	for _, r := range regs {
		f := w.b.reg(rF32)
		w.b.ins("mov.b32", f, r)
		w.b.ins("cvt.rna.tf32.f32", r, f)
	}
}

// tf32PV adds P·V of 8 keys to the accumulators: pf is P's A fragment, and V's B fragment of
// output columns 8n… is the words (key 2t, ev g) and (2t+1, g), at off bytes from vAddr (row 2t,
// column g of the tile) and a row of rowH words later.
func (w *attnMMA) tf32PV(acc []string, pf [4]string, vAddr string, off, rowH int) {
	b := w.b
	for n := range len(acc) / 4 {
		vf := []string{b.reg(rU32), b.reg(rU32)}
		for x, r := range vf {
			b.ins("ld.shared.b32", r, fmt.Sprintf("[%s+%d]", vAddr, off+4*(x*rowH+8*n)))
		}
		w.roundTF32(vf)
		c := acc[4*n : 4*n+4]
		b.ins(mmaShapeOf(ir.F32).inst, "{"+joinRegs(c)+"}", "{"+joinRegs(pf[:])+"}", "{"+joinRegs(vf)+"}", "{"+joinRegs(c)+"}")
	}
}

// halfQ loads Q's 16-bit A fragments: ks-th 16 columns, registers (row g, k 2t), (g+8, 2t),
// (g, 2t+8), (g+8, 2t+8); rowAddr[i] is column 2t of rows g and g+8, ok[i] that the row is
// below L.
func (w *attnMMA) halfQ(qf [][4]string, rowAddr, ok [2]string) { w.halfA(w.ops[0], qf, rowAddr, ok) }

// halfA loads the 16-bit A fragments of rows g and g+8 of operand qo as halfQ does Q's.
func (w *attnMMA) halfA(qo attnOperand, qf [][4]string, rowAddr, ok [2]string) {
	b := w.b
	// Pairs of adjacent columns load as one word where they are 4-byte aligned.
	pairs := qo.strides[3] == 1 && rowsAligned(qo, 2)
	for ks := range qf {
		for j := range 4 {
			if pairs {
				qf[ks][j] = b.reg(rU32)
				b.ins("mov.b32", qf[ks][j], "0")
				b.guarded(ok[j%2], "ld.global.b32", qf[ks][j], fmt.Sprintf("[%s+%d]", rowAddr[j%2], 2*(16*ks+8*(j/2))))
				continue
			}
			hs := [2]string{}
			for x := range 2 {
				hs[x] = b.reg(rB16)
				b.ins("mov.b16", hs[x], "0")
				c := 16*ks + 8*(j/2) + x
				b.guarded(ok[j%2], "ld.global.b16", hs[x], fmt.Sprintf("[%s+%d]", rowAddr[j%2], 2*c*qo.strides[3]))
			}
			qf[ks][j] = b.reg(rU32)
			b.ins("mov.b32", qf[ks][j], "{"+hs[0]+", "+hs[1]+"}")
		}
	}
}

// mmaTransB accumulates acc += a·B for one 16-row step kk of B, a row-major 16-bit tile in shared
// memory at base with rows of rowH halves: for each 16 of its cols columns, one ldmatrix .x4
// .trans gives the B fragments of two m16n8k16 products into acc's 8-column groups (the P·V of
// the forward, the dS·K of dq).
func mmaTransB(b *builder, inst string, acc []string, a [4]string, base string, kk, rowH, cols int) {
	for nj := range cols / 16 {
		bf := []string{b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)}
		b.ins(ldmatrix(true), "{"+joinRegs(bf)+"}", fmt.Sprintf("[%s+%d]", base, 2*(16*kk*rowH+16*nj)))
		for x := range 2 {
			c := acc[4*(2*nj+x) : 4*(2*nj+x)+4]
			b.ins(inst, "{"+joinRegs(c)+"}", "{"+joinRegs(a[:])+"}", "{"+bf[2*x]+", "+bf[2*x+1]+"}", "{"+joinRegs(c)+"}")
		}
	}
}
