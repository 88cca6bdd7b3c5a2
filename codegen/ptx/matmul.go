package ptx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// The f32 matmul template: C[b] = A[b]·B[b] for any dot_general with one (or mergeable)
// contracting dim and at most one (or mergeable) free dim per side, with the kernel's other ops
// as an epilogue applied to each accumulator in registers before its single store.
//
// A block computes a 128×128 tile of C with 256 threads, each an 8×8 register block (rows
// ty·4+i and 64+ty·4+i, columns alike, so a warp's 128-bit shared loads are contiguous). K
// advances in steps of 8 through two shared-memory buffers filled by cp.async (4-byte copies,
// zero-filled outside the matrix), so the copy of step k+1 overlaps the FMAs of step k. Shared
// rows are padded by 4 floats, which keeps the transposing stores free of bank conflicts.
const (
	mmBM, mmBN, mmBK = plan.GEMMTileM, plan.GEMMTileN, plan.GEMMTileK
	mmThreads        = plan.GEMMThreads
	mmPad            = plan.GEMMPad
)

// operandLayout addresses one dot operand as [batch...][free][k] through element strides.
type operandLayout struct {
	v *ir.Value // the buffer read (views are folded into off and the strides)
	// view is set for a generic operand: the value whose element (batch, free, k) each copy
	// evaluates through its views (dims by role; contract dims in the dot's order).
	view                              *ir.Value
	batchDims, freeDims, contractDims []int
	off                               int // element offset of the view's first element
	batchStrides                      []int
	free, freeSt                      int // merged free dim (size 1 if none)
	k, kSt                            int
}

// mergeDims merges dims (positions into shape, with element strides st) into one dim: they
// must be adjacent and ascending, and each must step over exactly the dims after it (size-1
// dims aside).
func mergeDims(shape ir.Shape, st []int, pos []int) (size, stride int, ok bool) {
	if len(pos) == 0 {
		return 1, 0, true
	}
	size = 1
	inner := -1 // the innermost non-1 dim so far (walking outward)
	for i := len(pos) - 1; i >= 0; i-- {
		p := pos[i]
		if i > 0 && p != pos[i-1]+1 {
			return 0, 0, false
		}
		size *= shape[p]
		if shape[p] == 1 {
			continue
		}
		if inner >= 0 && st[p] != st[inner]*shape[inner] {
			return 0, 0, false
		}
		if inner < 0 {
			stride = st[p]
		}
		inner = p
	}
	return size, stride, true
}

// viewOf follows a chain of views (transpose, slice, broadcast_in_dim, reshape) from v down to
// the input or param it reads, and returns the element offset and per-dim element strides of v
// in that buffer. ok is false where a view is not strided (a reshape across non-contiguous
// dims) or v is computed.
func viewOf(v *ir.Value) (base *ir.Value, off int, st []int, ok bool) {
	switch v.Op {
	case ir.OpInput, ir.OpParam:
		return v, 0, v.Type.Shape.Strides(), true
	case "transpose", "slice", "broadcast_in_dim", "reshape":
	default:
		return nil, 0, nil, false
	}
	base, off, ost, ok := viewOf(v.Args[0])
	if !ok {
		return nil, 0, nil, false
	}
	os, rs := v.Args[0].Type.Shape, v.Type.Shape
	st = make([]int, len(rs))
	switch v.Op {
	case "transpose":
		for i, p := range v.Attrs.Ints("perm") {
			st[i] = ost[p]
		}
	case "slice":
		start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		for i := range st {
			off += start[i] * ost[i]
			st[i] = ost[i]
			if step != nil {
				st[i] *= step[i]
			}
		}
	case "broadcast_in_dim":
		for i, d := range v.Attrs.Ints("dims") {
			if os[i] != 1 {
				st[d] = ost[i]
			}
		}
	case "reshape":
		// Walk both shapes in groups of equal element count; within a group the operand's dims
		// must be contiguous, and the result's dims get row-major strides over the group's
		// innermost stride.
		i, j := 0, 0
		for i < len(os) || j < len(rs) {
			gi, gj := i, j
			pi, pj := 1, 1
			if i < len(os) {
				pi *= os[i]
				i++
			}
			if j < len(rs) {
				pj *= rs[j]
				j++
			}
			for pi != pj {
				if pi < pj && i < len(os) {
					pi *= os[i]
					i++
				} else if j < len(rs) {
					pj *= rs[j]
					j++
				} else {
					return nil, 0, nil, false
				}
			}
			// absorb trailing size-1 dims into this group
			for i < len(os) && os[i] == 1 && (j >= len(rs) || rs[j] != 1) {
				i++
			}
			grp := make([]int, 0, i-gi)
			for d := gi; d < i; d++ {
				grp = append(grp, d)
			}
			// inner is 0 for a group of broadcast (stride-0) dims, which the result's dims
			// repeat too; a group of size-1 dims also gives 0, and its result dims have size 1.
			_, inner, ok := mergeDims(os, ost, grp)
			if !ok {
				return nil, 0, nil, false
			}
			acc := inner
			for d := j - 1; d >= gj; d-- {
				st[d] = acc
				acc *= rs[d]
			}
		}
	}
	return base, off, st, true
}

func layoutOf(v *ir.Value, batch, contract []int) (operandLayout, error) {
	s := v.Type.Shape
	base, off, st, ok := viewOf(v)
	if !ok {
		return genericLayout(v, batch, contract)
	}
	l := operandLayout{v: base, off: off}
	for _, d := range batch {
		l.batchStrides = append(l.batchStrides, st[d])
	}
	var free []int
	for d := range s.Rank() {
		if !slices.Contains(batch, d) && !slices.Contains(contract, d) {
			free = append(free, d)
		}
	}
	var ok1, ok2 bool
	l.free, l.freeSt, ok1 = mergeDims(s, st, free)
	l.k, l.kSt, ok2 = mergeDims(s, st, contract)
	if !ok1 || !ok2 {
		return genericLayout(v, batch, contract)
	}
	return l, nil
}

// genericLayout describes an operand whose (free, k) → address map is not affine (e.g. the
// heads of attention merged back through a transpose): each copy then evaluates the view chain
// at its coordinates. The copy map runs along k when the operand's last dim is contracting.
func genericLayout(v *ir.Value, batch, contract []int) (operandLayout, error) {
	s := v.Type.Shape
	for u := v; u.Op != ir.OpInput && u.Op != ir.OpParam; u = u.Args[0] {
		switch u.Op {
		case "transpose", "slice", "broadcast_in_dim", "reshape":
		default:
			return operandLayout{}, fmt.Errorf("dot_general operand %s is computed inside the kernel (%s); only views of buffers are a supported fusion", v.Type, u.Op)
		}
	}
	l := operandLayout{view: v, batchDims: batch, contractDims: contract, free: 1, k: 1}
	for d := range s.Rank() {
		switch {
		case slices.Contains(batch, d):
		case slices.Contains(contract, d):
			l.k *= s[d]
		default:
			l.freeDims = append(l.freeDims, d)
			l.free *= s[d]
		}
	}
	if s.Rank() > 0 && slices.Contains(contract, s.Rank()-1) {
		l.kSt = 1
	} else {
		l.freeSt = 1
	}
	return l, nil
}

func matmulKernel(k Kernel, t Target, globals *[]string) (string, Launch, error) {
	g := k.Graph
	var dot *ir.Value
	for _, v := range live(g) {
		if v.Op == "dot_general" || v.Op == "conv2d" {
			dot = v
		}
	}
	half := dot.Type.DType == ir.F16 || dot.Type.DType == ir.BF16
	// Epilogue: everything but the dot and what feeds it must be elementwise-computable at the
	// dot's element index, and every output has the dot's shape.
	for _, v := range live(g) {
		if v == dot || v.Op == ir.OpInput || v.Op == ir.OpParam {
			continue
		}
		if feedsOnly(v, dot, g) {
			continue // a view the operand reads through
		}
		if c := ops.ClassOf(v.Op); c == ops.Contraction || c == ops.Reduce {
			return "", Launch{}, fmt.Errorf("%s after a matmul is not a supported fusion", v.Op)
		}
	}
	pool, _, err := convPool(g, dot)
	if err != nil {
		return "", Launch{}, err
	}
	rows := rowOutputs(g, dot) // only the GEMV template writes them (gemvnormout.go)
	rowOuts := len(rows) > 0
	for i, o := range g.Outputs {
		if !o.Value.Type.Shape.Equal(dot.Type.Shape) && (pool == nil || !o.Value.Type.Shape.Equal(pool.Type.Shape)) && !slices.Contains(rows, i) {
			return "", Launch{}, fmt.Errorf("output %s %s does not have the matmul's shape %s", o.Name, o.Value.Type.Shape, dot.Type.Shape)
		}
	}
	nglobals := len(*globals)
	if p, ok := gemv.Of(dot); ok && pool == nil {
		text, l, err := gemvKernel(k, dot, p, pdlTarget(t), globals)
		if err == nil {
			if t.TF32 && dot.Type.DType == ir.F32 {
				text, l = tf32Note(text, l, "GEMV: a product of at most 8 rows is bound by its weight's bytes")
			}
			return text, l, nil
		}
		if rowOuts {
			return "", Launch{}, err
		}
		*globals = (*globals)[:nglobals] // the other templates say what they make of it
	} else if rowOuts {
		return "", Launch{}, fmt.Errorf("the GEMV template does not take the product, whose row prologue's values are outputs")
	}
	text, l, err := tiledKernel(k, dot, t, half, globals)
	if err != nil && pool != nil {
		// The passes fuse a pooling only where a tiled template applies.
		return "", Launch{}, fmt.Errorf("%s fused into a conv2d needs the tiled templates: %v", pool.Op, err)
	}
	if err != nil && k.Symbolic && !symDirectTakes(k, dot) {
		return "", Launch{}, err
	}
	if err != nil {
		// What the tiled templates cannot take falls back to the direct template (dropping any
		// module constants the attempt declared); an error there (an epilogue op no template
		// computes, say) is the kernel's error.
		*globals = (*globals)[:nglobals]
		why := err.Error()
		if text, l, err = directKernel(k, dot, why, globals); err != nil {
			return "", Launch{}, err
		}
		if t.TF32 && dot.Type.DType == ir.F32 {
			text, l = tf32Note(text, l, "exact direct template: "+why)
		}
		return text, l, nil
	}
	if t.TF32 && dot.Type.DType == ir.F32 && !strings.Contains(text, "mma.sync") {
		mm, _, _ := dotGEMM(dot) // tiledKernel succeeded with it; conv2d always takes tf32
		text, l = tf32Note(text, l, "FFMA: "+mm.tf32Fallback())
	}
	return text, l, nil
}

// tf32Note records that a kernel asked for tf32 computes an f32 contraction some other way:
// a comment above the entry and a note in its Launch, which the plan and `gcomp check` carry.
func tf32Note(text string, l Launch, why string) (string, Launch) {
	note := "tf32 fallback to " + why
	l.Notes = append(l.Notes, note)
	i := strings.Index(text, ".visible .entry")
	return text[:i] + "// " + note + "\n" + text[i:], l
}

// tiledKernel generates the 128×128-tile templates: FFMA, or tensor cores for 16-bit operands
// and tf32.
func tiledKernel(k Kernel, dot *ir.Value, t Target, half bool, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if dot.Type.DType != ir.F32 && !half {
		return "", Launch{}, fmt.Errorf("%s operands", dot.Type.DType)
	}
	if dot.Op == "conv2d" {
		for _, a := range dot.Args {
			if a.Op != ir.OpInput && a.Op != ir.OpParam {
				return "", Launch{}, fmt.Errorf("operand %s computed inside the kernel", g.Format(a))
			}
		}
	}
	var mm *matmul
	batch := 1
	if dot.Op == "conv2d" {
		var err error
		if mm, err = convGEMM(dot); err != nil {
			return "", Launch{}, err
		}
		if mm.conv.pool, mm.conv.win, err = convPool(g, dot); err != nil {
			return "", Launch{}, err
		}
		batch = mm.conv.groups
	} else {
		var err error
		if mm, batch, err = dotGEMM(dot); err != nil {
			return "", Launch{}, err
		}
	}
	useMMA := half || (t.TF32 && mm.tf32Eligible())
	mm.rn = mm.narrowColRegs() // the tensor-core tile is 16·rn columns wide too (mmaWarps)
	b := newBuilder(k.Name)
	// Two blocks per SM (25% occupancy) caps registers at 128 per thread. With a single k step
	// (K ≤ 8) ptxas schedules the straight-line FMAs and epilogue into spills under that cap, and
	// such a kernel is bound by its epilogue's memory traffic anyway: it goes uncapped.
	// The tensor-core kernel stays under 128 registers by itself, and any cap (.maxntid, .maxnreg,
	// .minnctapersm) makes ptxas spill it: it goes uncapped, and the tests check its count.
	if !useMMA {
		b.perf = fmt.Sprintf(".maxntid %d, 1, 1", mmThreads)
		if n := mm.minBlocksPerSM(); n > 0 {
			b.perf += fmt.Sprintf("\n.minnctapersm %d", n)
		} else if mm.conv != nil && mm.conv.pool != nil {
			// Uncapped means it: with a pooled epilogue ptxas for sm_90 otherwise holds the
			// straight-line kernel to 128 registers by itself, and spills.
			b.perf += "\n.maxnreg 255"
		}
	}
	gn, args := header(k, b, globals)
	mm.gen = gn
	work, err := mm.symbolic(k, b, &args, useMMA)
	if err != nil {
		return "", Launch{}, err
	}
	emit := mm.emit
	if useMMA {
		emit = mm.emitMMA
	}
	if err := emit(); err != nil {
		return "", Launch{}, err
	}
	if mm.symEnd != "" {
		b.place(mm.symEnd)
	}
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{ceilDiv(mm.N, 16*mm.rn), ceilDiv(mm.M, mmBM), batch}, Block: [3]int{mmThreads, 1, 1}, Params: args, Work: work}
	return b.text(), l, nil
}

// dotGEMM views a dot_general as a (batched) GEMM.
func dotGEMM(dot *ir.Value) (*matmul, int, error) {
	if dq := quantOperand(dot); dq != nil {
		return quantGEMM(dot, dq)
	}
	lb, rb := dot.Attrs.Ints("lhs_batch"), dot.Attrs.Ints("rhs_batch")
	lhs, err := layoutOf(dot.Args[0], lb, dot.Attrs.Ints("lhs_contract"))
	if err != nil {
		return nil, 0, err
	}
	rhs, err := layoutOf(dot.Args[1], rb, dot.Attrs.Ints("rhs_contract"))
	if err != nil {
		return nil, 0, err
	}
	batch := 1
	var batchShape ir.Shape
	for _, d := range lb {
		batch *= dot.Args[0].Type.Shape[d]
		batchShape = append(batchShape, dot.Args[0].Type.Shape[d])
	}
	if batch > 65535 {
		return nil, 0, fmt.Errorf("a batch of %d matmuls exceeds the grid's z limit", batch)
	}
	return &matmul{M: lhs.free, N: rhs.free, K: lhs.k, lhs: lhs, rhs: rhs, dot: dot, batchShape: batchShape}, batch, nil
}

type matmul struct {
	*gen
	M, N, K    int
	rn         int       // the tile's columns over 16 (narrowColRegs): FFMA accumulator columns per thread
	conv       *convSpec // set for conv2d: A is the implicit im2col matrix of the image
	lhs, rhs   operandLayout
	dot        *ir.Value
	batchShape ir.Shape
	quant      *quantB // set when B is a dequantize read as integers (mma_dequant.go)
	// symM is a symbolic kernel's M at the run's sizes (its size parameter; symgemm.go), or "";
	// symEnd, the label a block past a symbolic batch jumps to, or ""; symK, K at the run's
	// sizes when it is the symbolic rows (symfold.go), or "".
	symM, symEnd, symK string
	// symN is N at the run's sizes when the right operand's free dim is symbolic
	// (symcontract_rhs.go), or ""; symOut, that the result is laid out at the run's sizes (a
	// batched product over a symbolic dim, symcontract.go).
	symN   string
	symOut bool
	// symNAlign is what N's expression is a multiple of at every size; symCols, a multiple of
	// which the run's N is in the epilogue being emitted (0: unknown); symColsLeft, symRowsLeft,
	// symRowBase and symRowLin, the direct tensor-core epilogue's hoisted columns and rows left
	// and row indexes (symcontract_rhs_store.go).
	symNAlign, symCols                   int
	symColsLeft, symRowsLeft, symRowBase string
	symRowLin                            map[int]string
	symv                                 *symView // a symbolic kernel's generic left operand at the run's sizes (symview.go)
	// symBatchSt holds, per operand and batch dim, the register of a batch stride at the run's
	// sizes ("" for the bound's immediate; symcontract.go).
	symBatchSt [2][]string
	// symBatchAt is the run's batch sizes when a symbolic batch dim follows a static one: grid.z
	// splits into batch coordinates at them (symcontract_after.go); nil otherwise.
	symBatchAt []sym.Expr
}

// narrowColRegs is the FFMA template's accumulator columns per thread: 8 (a 128-column tile)
// unless the product is a conv2d of at most 64 output channels per group, whose tile is then as
// narrow as the channels allow (16·regs ≥ N), so few of its multiply-adds meet the zero columns
// past N: a 16-channel convolution would otherwise spend 7/8 of them there. The rows stay 128
// (8 per thread), and the block count stays ceil(M/128) per group. Dots keep 128 columns.
func (mm *matmul) narrowColRegs() int {
	if mm.conv == nil {
		return 8
	}
	r := 1
	for 16*r < mm.N && r < 8 {
		r *= 2
	}
	return r
}

// minBlocksPerSM is the FFMA template's .minnctapersm (0: none). Two blocks per SM cap the
// registers at 128, which the 64 accumulators of a 128-column tile need; a narrow tile's 8 to 32
// accumulators run three (85 registers; with the k loop not unrolled they use 68–80). With a
// single k step (K ≤ 8) the kernel goes uncapped.
func (mm *matmul) minBlocksPerSM() int {
	switch {
	case mm.K <= mmBK:
		return 0
	case mm.rn < 8:
		return 3
	}
	return 2
}

// rowOf is the tile row (or column) of register i of a thread at position p in its 16×16 grid.
func tileOffset(p string, i int, a ia) string {
	return a.add(a.mul(p, 4), imm(RegTileOffset(i)))
}

func (mm *matmul) emit() error {
	b, a := mm.e.b, mm.a
	rn, bn := mm.rn, 16*mm.rn
	const aBytes = mmBK * (mmBM + mmPad) * 4
	bBytes := mmBK * (bn + mmPad) * 4
	sA := b.sharedArray("tileA", 2*aBytes, 16)
	sB := b.sharedArray("tileB", 2*bBytes, 16)
	tid, bx, by, bz := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	b.ins("mov.u32", bx, "%ctaid.x")
	b.ins("mov.u32", by, "%ctaid.y")
	b.ins("mov.u32", bz, "%ctaid.z")
	tx, ty := b.reg(rU32), b.reg(rU32)
	b.ins("and.b32", tx, tid, "15")
	b.ins("shr.u32", ty, tid, "4")
	m0, n0 := a.mul(by, mmBM), a.mul(bx, bn)
	// A thread's rows come from ty and columns from tx, so a warp's stores run along the result's
	// rows. conv2d swaps them: its GEMM rows are pixels, contiguous in the NCHW output.
	rowT, colT := ty, tx
	if mm.conv != nil {
		rowT, colT = tx, ty
	}
	// Batch: coordinates of blockIdx.z, and each operand's element offset.
	bidx := mm.batchIndex(bz)
	offA, offB := "0", "0"
	for i := range mm.batchShape {
		c := bidx.getCoord(a, i)
		if mm.lhs.view == nil { // generic operands address their batch themselves
			offA = mm.batchOffset(0, i, c, offA)
		}
		if mm.rhs.view == nil {
			offB = mm.batchOffset(1, i, c, offB)
		}
	}
	offA, offB = a.add(offA, imm(mm.lhs.off)), a.add(offB, imm(mm.rhs.off))
	baseA, baseB := mm.ptr[mm.lhs.v], mm.ptr[mm.rhs.v]
	if mm.lhs.view != nil {
		baseA = mm.ptr[mm.kernelGraph.Inputs()[0]] // unused: generic copies address their own buffer
	}
	if mm.rhs.view != nil {
		baseB = mm.ptr[mm.kernelGraph.Inputs()[0]]
	}
	if offA != "0" {
		baseA = mm.scaledAddr(baseA, offA, 4)
	}
	if offB != "0" {
		baseB = mm.scaledAddr(baseB, offB, 4)
	}
	shA, shB := b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", shA, sA)
	b.ins("mov.u32", shB, sB)

	// Each thread copies 4 elements of each tile per step. The thread→element map follows the
	// operand's contiguous dim, so a warp's copies are coalesced; copy i sits at constant
	// distances (df, dk) from the thread's first one, so only a pointer, a shared offset and the
	// first coordinates stay live through the loop.
	type side struct {
		l           operandLayout
		rows, nFree int
		f0, kq      string // the thread's first copy: free and k coordinates in the tile
		df, dk      []int
		threads     int    // threads below it copy (a tile of fewer elements than threads)
		ptr         string // global address of the first copy at the current k step
		base        string // the operand's first element: a safe address for empty copies
		sh          string // shared byte offset of the first copy in buffer 0
		bufBytes    int
		// copyAt, if set, replaces the strided addressing: the source address and validity of
		// copy i at k step k0 (conv2d's image side).
		copyAt func(k0 string, i int) (src, ok string)
	}
	mkSide := func(l operandLayout, rows, nFree int, f0tile, shBase, base string, bufBytes int) *side {
		sd := &side{l: l, rows: rows, nFree: nFree, bufBytes: bufBytes, base: base}
		cm := copyMap(l.kSt, l.freeSt, rows)
		sd.df, sd.dk, sd.threads = cm.DF[:cm.N], cm.DK[:cm.N], cm.Threads
		if cm.AlongK {
			sd.f0, sd.kq = a.add(f0tile, a.div(tid, mmBK)), a.rem(tid, mmBK)
		} else {
			sd.f0, sd.kq = a.add(f0tile, a.rem(tid, rows)), a.div(tid, rows)
		}
		// shared: ((kq+dk)·(rows+pad) + (f0−f0tile) + df)·4
		fl := a.sub(sd.f0, f0tile)
		sd.sh = a.add(a.mul(a.mad(sd.kq, rows+mmPad, fl), 4), shBase)
		// global: clamp(f0)·freeSt + kq·kSt elements from base
		off := a.mad(a.clamp(sd.f0, nFree), l.freeSt, a.mul(sd.kq, l.kSt))
		sd.ptr = b.reg(rU64)
		o := b.reg(rU64)
		b.ins("mul.wide.u32", o, a.reg(off), "4")
		b.ins("add.s64", sd.ptr, base, o)
		return sd
	}
	sides := []*side{
		mkSide(mm.lhs, mmBM, mm.M, m0, shA, baseA, aBytes),
		mkSide(mm.rhs, bn, mm.N, n0, shB, baseB, bBytes),
	}
	if mm.conv != nil {
		sides[0].copyAt = mm.conv.copier(mm, sides[0].f0, sides[0].kq, sides[0].dk, baseA, 4)
	}
	for si, l := range []operandLayout{mm.lhs, mm.rhs} {
		if l.view != nil {
			sd := sides[si]
			sides[si].copyAt = mm.genericCopier(l, sd.f0, sd.kq, sd.df, sd.dk, sd.nFree, bidx, 4, 1)
		}
	}

	nk := ceilDiv(mm.K, mmBK)
	nkRun := mm.kSteps(mmBK)
	// issue copies k step kt (k0 = kt·8) into buffer buf, then advances each side's pointer.
	issue := func(k0 string, buf string) {
		for _, sd := range sides {
			bufBase := a.mad(buf, sd.bufBytes, sd.sh)
			kc := a.add(k0, sd.kq)
			noCopy := ""
			if sd.threads < mmThreads {
				noCopy = b.label("no_copy")
				idle := b.reg(rPred)
				b.ins("setp.ge.u32", idle, tid, imm(sd.threads))
				b.braIf(idle, noCopy)
			}
			for i := range sd.df {
				if sd.copyAt != nil {
					src, ok := sd.copyAt(k0, i)
					n := b.reg(rU32)
					b.ins("selp.b32", n, "4", "0", ok)
					dst := fmt.Sprintf("[%s+%d]", bufBase, 4*(sd.dk[i]*(sd.rows+mmPad)+sd.df[i]))
					b.ins("cp.async.ca.shared.global", dst, "["+src+"]", "4", n)
					continue
				}
				// Signed compares: a bound ≤ 0 means the copy never lies inside.
				ok := b.reg(rPred)
				b.ins("setp.lt.s32", ok, a.reg(kc), mm.kBelow(sd.dk[i]))
				okF := b.reg(rPred)
				b.ins("setp.lt.s32", okF, a.reg(sd.f0), mm.freeBelow(sd == sides[0], sd.nFree, sd.df[i]))
				b.ins("and.pred", ok, ok, okF)
				// Out of range: copy 0 bytes (zero fill) from an address inside the operand.
				src := b.reg(rU64)
				b.ins("add.s64", src, sd.ptr, imm(4*(sd.df[i]*sd.l.freeSt+sd.dk[i]*sd.l.kSt)))
				b.ins("selp.b64", src, src, sd.base, ok)
				n := b.reg(rU32)
				b.ins("selp.b32", n, "4", "0", ok)
				dst := fmt.Sprintf("[%s+%d]", bufBase, 4*(sd.dk[i]*(sd.rows+mmPad)+sd.df[i]))
				b.ins("cp.async.ca.shared.global", dst, "["+src+"]", "4", n)
			}
			if noCopy != "" {
				b.place(noCopy)
			}
			// Next step: 8 further along k.
			if sd.copyAt == nil {
				b.ins("add.s64", sd.ptr, sd.ptr, imm(4*mmBK*sd.l.kSt))
			}
		}
		b.ins("cp.async.commit_group")
	}

	acc := make([]string, 8*rn)
	for i := range acc {
		acc[i] = b.reg(rF32)
		b.ins("mov.f32", acc[i], immF32(0))
	}
	b.note("k step 0")
	issue("0", "0")
	b.ins("cp.async.wait_group", "0")
	b.ins("bar.sync", "0")
	// FMAs of one step from buffer cur: per kk, two 128-bit loads of A's column and B's row (one
	// load of 1, 2 or 4 floats for a narrow tile's row).
	cw := RegColStep(rn)
	compute := func(cur string) {
		rowA := a.mad(cur, aBytes, a.add(shA, a.mul(rowT, 16)))
		rowB := a.mad(cur, bBytes, a.add(shB, a.mul(colT, 4*cw)))
		for kk := range mmBK {
			av := make([]string, 8)
			bv := make([]string, rn)
			for h := range 2 {
				for _, side := range []struct {
					dst       []string
					base      string
					row, wide int
				}{{av, rowA, mmBM + mmPad, 4}, {bv, rowB, bn + mmPad, cw}} {
					if (h+1)*side.wide > len(side.dst) {
						continue
					}
					regs := side.dst[h*side.wide : (h+1)*side.wide]
					for j := range regs {
						regs[j] = b.reg(rF32)
					}
					op, dst := fmt.Sprintf("ld.shared.v%d.f32", side.wide), "{"+joinRegs(regs)+"}"
					if side.wide == 1 {
						op, dst = "ld.shared.f32", regs[0]
					}
					b.ins(op, dst, fmt.Sprintf("[%s+%d]", side.base, (kk*side.row+h*64)*4))
				}
			}
			for i := range 8 {
				for j := range rn {
					b.ins("fma.rn.f32", acc[i*rn+j], av[i], bv[j], acc[i*rn+j])
				}
			}
		}
	}
	if nk == 1 {
		// One step: no loop, whose single trip ptxas would schedule into spills.
		compute("0")
	} else {
		kt := b.reg(rU32)
		b.ins("mov.u32", kt, "0")
		loop, done := b.label("k_loop"), b.label("k_done")
		b.place(loop)
		if rn < 8 {
			// Unrolled, a narrow tile's loop has ptxas hoist the copies and loads of every step
			// and spill (a conv2d with a pooled epilogue and two outputs: 4–16 bytes at any cap).
			b.ins(".pragma", `"nounroll"`)
		}
		p := b.reg(rPred)
		b.ins("setp.ge.u32", p, kt, nkRun)
		b.braIf(p, done)
		cur := b.reg(rU32)
		b.ins("and.b32", cur, kt, "1")
		next := b.reg(rU32)
		b.ins("add.s32", next, kt, "1")
		more := b.reg(rPred)
		b.ins("setp.lt.u32", more, next, nkRun)
		skipIssue := b.label("no_prefetch")
		b.braIf("!"+more, skipIssue)
		nbuf := b.reg(rU32)
		b.ins("xor.b32", nbuf, cur, "1")
		issue(a.mul(next, mmBK), nbuf)
		b.place(skipIssue)
		compute(cur)
		b.ins("cp.async.wait_group", "0")
		b.ins("bar.sync", "0")
		b.ins("add.s32", kt, kt, "1")
		b.bra(loop)
		b.place(done)
	}

	// Epilogue: each accumulator through the fused ops, then its one store.
	b.note("epilogue")
	rows := make([]string, 8)
	cols := make([]string, rn)
	for i := range 8 {
		rows[i] = a.add(m0, tileOffset(rowT, i, a))
		if i < rn {
			cols[i] = a.add(n0, a.add(a.mul(colT, cw), imm(RegTileOffset(i))))
		}
	}
	if mm.symN != "" { // groups where the run's N allows (symcontract_rhs_store.go)
		for d := range mm.batchShape {
			bidx.getCoord(a, d) // before the branch: both epilogues read them
		}
		return mm.symColsBranch(func() error { return mm.ffmaEpilogue(rows, cols, bz, bidx, acc) }, 4)
	}
	return mm.ffmaEpilogue(rows, cols, bz, bidx, acc)
}

// ffmaEpilogue runs each accumulator of an FFMA tile through the fused ops and stores it.
func (mm *matmul) ffmaEpilogue(rows, cols []string, bz string, bidx *index, acc []string) error {
	b, a, g, rn := mm.e.b, mm.a, mm.kernelGraph, mm.rn
	shape := mm.dot.Type.Shape
	nb := len(mm.batchShape)
	single := mm.rowColShape()
	// Four consecutive columns form an element group (one 128-bit store, and 128-bit loads of
	// row-broadcast operands such as a bias) when rows hold whole groups.
	// conv2d groups four consecutive pixels instead (contiguous in the output while a plane
	// holds whole groups: OH·OW % 4 = 0).
	w, wi := 1, 1
	narrow := true
	for _, o := range g.Outputs {
		narrow = narrow && o.Value.Type.DType.Size() <= 4
	}
	switch {
	case mm.conv != nil && mm.conv.pool != nil:
		// Pooled: rows i..i+3 of a thread are consecutive pixels, whole windows.
		for i := 0; i < 8; i += 4 {
			for j := range rn {
				accs := make([]val, 4)
				for l := range accs {
					accs[l] = val{ir.F32, acc[(i+l)*rn+j]}
				}
				if err := mm.pooledRows(rows[i], cols[j], a.mad(bz, mm.N, cols[j]), accs); err != nil {
					return err
				}
			}
		}
		return nil
	case mm.conv == nil && mm.colGroups(4) && narrow:
		w = 4
	case mm.conv != nil && mm.conv.oh*mm.conv.ow%4 == 0 && narrow:
		wi = 4
	}
	for i := 0; i < 8; i += wi {
		for j0 := 0; j0 < rn; j0 += w {
			skip := b.label("skip")
			okm, okn := b.reg(rPred), b.reg(rPred)
			b.ins("setp.lt.u32", okm, rows[i], mm.freeBelow(true, mm.M, 0))
			b.ins("setp.lt.u32", okn, cols[j0], mm.colsBelow(0))
			ok := b.reg(rPred)
			b.ins("and.pred", ok, okm, okn)
			b.braIf("!"+ok, skip)
			mm.reset()
			lin := mm.outLin(bz, rows[i], cols[j0])
			var x *index
			if mm.conv != nil {
				x, lin = mm.conv.outIndex(a, rows[i], a.mad(bz, mm.N, cols[j0]))
			} else {
				x = newIndexLin(shape, lin)
			}
			if mm.conv == nil && single {
				for d := range nb {
					x.coord[d] = bidx.getCoord(a, d)
				}
				x.coord[nb], x.coord[nb+1] = rows[i], cols[j0]
				if shape[nb] == 1 {
					x.coord[nb] = "0"
				}
				if shape[nb+1] == 1 {
					x.coord[nb+1] = "0"
				}
			}
			lanes := []*index{x}
			switch {
			case wi > 1:
				lanes = mm.conv.pixelLanes(a, x, rows[i], a.mad(bz, mm.N, cols[j0]), wi)
			case w > 1:
				newGroup(a, x, w, false)
				lanes = x.lanes
			}
			accOf := map[*index]val{}
			for l, xl := range lanes {
				if wi > 1 {
					accOf[xl] = val{ir.F32, acc[(i+l)*rn+j0]}
				} else {
					accOf[xl] = val{ir.F32, acc[i*rn+j0+l]}
				}
			}
			mm.bound[mm.dot] = func(x *index) val { return accOf[x] }
			for oi, o := range g.Outputs {
				vals := make([]val, len(lanes))
				for l, xl := range lanes {
					v, err := mm.eval(o.Value, xl)
					if err != nil {
						return err
					}
					vals[l] = v
				}
				if len(vals) == 1 {
					mm.store(o.Value, mm.outPtr[oi], lin, vals[0])
				} else {
					mm.vectorStore(o.Value, mm.outPtr[oi], lin, vals)
				}
			}
			mm.reset()
			b.place(skip)
		}
	}
	return nil
}

// rowColShape reports whether the result's dims after the batch dims are exactly the GEMM's
// rows and columns, [M, N] (one free dim on each side), so that an epilogue element's coordinates
// are its row and column. A side without free dims makes M or N 1 while the other side's free dims
// fill both places: f32[4]·f32[4,3,8] is 1×24 with a result of [3,8].
func (mm *matmul) rowColShape() bool {
	shape, nb := mm.dot.Type.Shape, len(mm.batchShape)
	return shape.Rank() == nb+2 && shape[nb] == mm.M && shape[nb+1] == mm.N
}

// colGroups reports whether w consecutive GEMM columns starting at a multiple of w are w
// consecutive elements of one innermost row of the result, as an element group needs. The
// result's innermost dim is N only when the result is [batch..., M, N]: with one side without
// free dims the other side's free dims fill N, which may be a multiple of w while the innermost
// dim is not (f32[4]·f32[4,2,2,3] is 1×12 with a result ending in 3).
func (mm *matmul) colGroups(w int) bool {
	shape := mm.dot.Type.Shape
	if mm.symN != "" { // a group lies in one row where the run's N is a multiple (symcontract_rhs_store.go)
		return w == 1 || mm.symCols > 0 && mm.symCols%w == 0
	}
	return mm.N%w == 0 && shape.Rank() > 0 && shape[shape.Rank()-1]%w == 0
}

func joinRegs(r []string) string {
	s := ""
	for i, x := range r {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// feedsOnly reports whether v is used only on the way to dot's operands (a view they read
// through), so it is not part of the epilogue.
func feedsOnly(v, dot *ir.Value, g *ir.Graph) bool {
	for _, o := range g.Outputs {
		if o.Value == v {
			return false
		}
	}
	for _, u := range g.Values {
		if slices.Contains(u.Args, v) && u != dot && !feedsOnly(u, dot, g) {
			return false
		}
	}
	return true
}

// genericCopier addresses the copies of a generic operand (eb-byte elements, chunk of them per
// copy): each copy delinearizes its free and k coordinates over the operand's dims and follows
// the views to the buffer.
func (mm *matmul) genericCopier(l operandLayout, f0, kq string, df, dk []int, nFree int, bidx *index, eb, chunk int) func(k0 string, i int) (string, string) {
	if mm.symv != nil && (l.view == mm.lhs.view || mm.symK != "" || mm.symOut) {
		return mm.symCopier(l, f0, kq, df, dk, nFree, bidx, eb)
	}
	a, b := mm.a, mm.e.b
	s := l.view.Type.Shape
	return func(k0 string, i int) (string, string) {
		f := a.add(f0, imm(df[i]))
		k := a.add(a.add(k0, kq), imm(dk[i]))
		ok := b.reg(rPred)
		b.ins("setp.lt.s32", ok, a.reg(f), imm(nFree))
		okK := b.reg(rPred)
		b.ins("setp.lt.s32", okK, a.reg(k), imm(mm.K))
		b.ins("and.pred", ok, ok, okK)
		// An out-of-range copy reads the clamped coordinates' element, which a chunk keeps at a
		// multiple of it along its contiguous group: 16-byte aligned, as cp.async asks of its
		// source even when it moves no bytes.
		fc, kc := 1, 1
		if l.kSt == 1 {
			kc = chunk
		} else {
			fc = chunk
		}
		f, k = a.clamp(f, max(1, nFree-fc+1)), a.clamp(k, max(1, mm.K-kc+1))
		c := make([]string, s.Rank())
		for j, d := range l.batchDims {
			c[d] = bidx.getCoord(a, j)
		}
		for _, grp := range []struct {
			dims []int
			lin  string
		}{{l.freeDims, f}, {l.contractDims, k}} {
			sizes := make(ir.Shape, len(grp.dims))
			for j, d := range grp.dims {
				sizes[j] = s[d]
			}
			x := newIndexLin(sizes, grp.lin)
			for j, d := range grp.dims {
				c[d] = x.getCoord(a, j)
			}
		}
		buf, lin, err := mm.viewLin(l.view, newIndexCoords(s, c))
		if err != nil && mm.err == nil {
			mm.err = err
		}
		if err != nil {
			return mm.ptr[mm.kernelGraph.Inputs()[0]], ok
		}
		return mm.scaledAddr(mm.ptr[buf], lin, eb), ok
	}
}
