package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// The pool-tile template: a loop kernel whose pooling is read at the output's own linear index
// stages the pool's input through shared memory. A block takes poolTileOut consecutive outputs;
// their windows all lie in one contiguous range of the input (the first output's first tap to
// the last output's last tap, see poolSpan), which the block reads with consecutive threads on
// consecutive elements — coalesced whatever the stride — and every thread then pools its output
// from shared memory. Per-thread window reads straight from global memory touch a sector for
// every stride·4 bytes a warp's 32 outputs advance, several times per window row.
const poolTileOut = 256 // outputs per block and threads per block

// maxPoolTileBytes caps the staged range (a wide image row with a window taller than 1 makes a
// range far longer than the outputs it serves); larger ones keep per-thread window reads.
const maxPoolTileBytes = 24 << 10

type poolTile struct {
	pool *ir.Value // max_pool2d or avg_pool2d, read only at the output's linear index
	span int       // elements of the pool's input one tile reads, at most
	slot int       // bytes per staged element
}

// findPoolTile returns the pooling worth staging in a loop kernel over shape, or nil.
func findPoolTile(g *ir.Graph, shape ir.Shape) *poolTile {
	n := shape.NumElements()
	if n == 0 {
		return nil
	}
	uses := usesOf(g)
	for _, v := range live(g) {
		// Consumers are elementwise at the same shape or reshapes (both keep the linear index),
		// so the pool is read at the output's linear index only.
		if (v.Op != "max_pool2d" && v.Op != "avg_pool2d") || v.Type.Shape.NumElements() != n || !readAtIndex(uses, v, true) {
			continue
		}
		slot := 4
		if c := classOf(v.Args[0].Type.DType); c == rF64 || c == rU64 {
			slot = 8
		}
		span := poolSpan(v, n)
		if span*slot > maxPoolTileBytes {
			continue
		}
		return &poolTile{pool: v, span: span, slot: slot}
	}
	return nil
}

// poolWindow is a pool's geometry: input shape [N, C, H, W], kernel, stride and padding.
type poolWindow struct {
	s                   ir.Shape
	kern, stride, pad   []int
	outH, outW, outSize int
}

func windowOf(v *ir.Value) poolWindow {
	w := poolWindow{s: v.Args[0].Type.Shape, kern: v.Attrs.Ints("kernel"), stride: v.Attrs.Ints("stride"), pad: v.Attrs.Ints("padding")}
	if w.stride == nil {
		w.stride = w.kern
	}
	if w.pad == nil {
		w.pad = []int{0, 0}
	}
	w.outH, w.outW = v.Type.Shape[2], v.Type.Shape[3]
	return w
}

// first and last are the linear input indexes that bound the windows of output o: its first
// and its last tap, coordinates clamped into the image as poolTaps clamps them. Without row
// padding the taps of a run of outputs lie between the first output's first tap and the last
// output's last tap: within a window (0, 0) is the least tap and (kh−1, kw−1) the greatest, and
// each tap is non-decreasing in o (rows grow by the stride from one output row to the next; a
// clamped column only repeats). Row padding clamps the first window rows of a plane onto row 0,
// where a later output's first tap can lie left of an earlier one's, so the bounds widen to whole
// rows.
func (w poolWindow) first(o int) int {
	plane, r := o/(w.outH*w.outW), o%(w.outH*w.outW)
	ih := clampInt(r/w.outW*w.stride[0]-w.pad[0], w.s[2])
	iw := clampInt(r%w.outW*w.stride[1]-w.pad[1], w.s[3])
	if w.pad[0] > 0 {
		iw = 0
	}
	return (plane*w.s[2]+ih)*w.s[3] + iw
}

func (w poolWindow) last(o int) int {
	plane, r := o/(w.outH*w.outW), o%(w.outH*w.outW)
	ih := clampInt(r/w.outW*w.stride[0]-w.pad[0]+w.kern[0]-1, w.s[2])
	iw := clampInt(r%w.outW*w.stride[1]-w.pad[1]+w.kern[1]-1, w.s[3])
	if w.pad[0] > 0 {
		iw = w.s[3] - 1
	}
	return (plane*w.s[2]+ih)*w.s[3] + iw
}

// poolSpan is the longest input range a tile of poolTileOut outputs reads. The range depends on
// where the tile starts in a plane, which repeats every lcm(plane, tile) outputs.
func poolSpan(v *ir.Value, n int) int {
	w := windowOf(v)
	plane := w.outH * w.outW
	period := plane / gcd(plane, poolTileOut) // tiles before the starts repeat
	span := 0
	for t := 0; t < ceilDiv(n, poolTileOut) && t <= period; t++ {
		o0, o1 := t*poolTileOut, min(n, (t+1)*poolTileOut)-1
		span = max(span, w.last(o1)-w.first(o0)+1)
	}
	return span
}

// clampInt bounds x to [0, n-1] as ia.clamp does.
func clampInt(x, n int) int { return max(0, min(x, n-1)) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func poolTileKernel(k Kernel, pt *poolTile, globals *[]string) (string, Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	n := shape.NumElements()
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	a := gn.a
	in := pt.pool.Args[0]
	w := windowOf(pt.pool)
	b.note("pool tile: %d outputs per block; the windows' input range, at most %d elements, staged in shared memory", poolTileOut, pt.span)
	stage := b.sharedArray("pool_in", pt.span*pt.slot, 8)
	base := b.reg(rU32)
	b.ins("mov.u32", base, stage)
	tid := b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	tiles := ceilDiv(n, poolTileOut)
	id, next := blockTiles(b, tiles)
	gn.reset()
	o0 := a.mul(id, poolTileOut)
	last := b.reg(rU32)
	b.ins("add.s32", last, o0, imm(poolTileOut-1))
	b.ins("min.u32", last, last, imm(n-1))
	// The same bounds as poolWindow.first and last, at run time.
	bound := func(o string, last bool) string {
		x := newIndexLin(pt.pool.Type.Shape, o)
		kh, kw := 0, 0
		if last {
			kh, kw = w.kern[0]-1, w.kern[1]-1
		}
		ih := a.clamp(a.add(a.sub(a.mul(x.getCoord(a, 2), w.stride[0]), imm(w.pad[0])), imm(kh)), w.s[2])
		iw := a.clamp(a.add(a.sub(a.mul(x.getCoord(a, 3), w.stride[1]), imm(w.pad[1])), imm(kw)), w.s[3])
		if w.pad[0] > 0 {
			iw = imm(map[bool]int{false: 0, true: w.s[3] - 1}[last])
		}
		return a.reg(newIndexCoords(w.s, []string{x.getCoord(a, 0), x.getCoord(a, 1), ih, iw}).getLin(a))
	}
	lo, hi := bound(o0, false), bound(last, true)
	d := in.Type.DType
	typ := sharedType(d)
	slotAddr := func(lin string) string {
		return fmt.Sprintf("[%s]", a.add(base, a.mul(a.sub(lin, lo), pt.slot)))
	}
	// Phase 1: consecutive threads read consecutive input elements of [lo, hi], starting from
	// the 32-byte sector that holds lo, so each warp's request covers whole sectors.
	q := b.reg(rU32)
	b.ins("and.b32", q, lo, imm(-max(1, 32/d.Size())))
	b.ins("add.s32", q, q, tid)
	lhead, lnext, ldone := b.label("stage"), b.label("stage_next"), b.label("stage_done")
	b.place(lhead)
	p := b.reg(rPred)
	b.ins("setp.gt.u32", p, q, hi)
	b.braIf(p, ldone)
	before := b.reg(rPred)
	b.ins("setp.lt.u32", before, q, lo)
	b.braIf(before, lnext)
	v, err := gn.eval(in, newIndexLin(w.s, q))
	if err != nil {
		return "", Launch{}, err
	}
	b.ins("st.shared."+typ, slotAddr(q), gn.e.reg(v))
	b.place(lnext)
	b.ins("add.s32", q, q, imm(poolTileOut))
	b.bra(lhead)
	b.place(ldone)
	gn.reset()
	b.ins("bar.sync", "0")
	// Phase 2: thread tid pools output o0 + tid from shared memory and computes the outputs.
	o := a.reg(a.add(o0, tid))
	skip := b.label("out_skip")
	b.braIf(predGE(b, o, n), skip)
	x := newIndexLin(shape, o)
	pv, err := gn.poolTaps(pt.pool, newIndexLin(pt.pool.Type.Shape, o), func(_, _ int, y *index) val {
		r := b.reg(classOf(d))
		b.ins("ld.shared."+typ, r, slotAddr(y.getLin(a)))
		return val{d, r}
	})
	if err != nil {
		return "", Launch{}, err
	}
	gn.bound[pt.pool] = func(*index) val { return pv }
	for i, out := range g.Outputs {
		ov, err := gn.eval(out.Value, x)
		if err != nil {
			return "", Launch{}, err
		}
		gn.store(out.Value, gn.outPtr[i], o, ov)
	}
	delete(gn.bound, pt.pool)
	b.place(skip)
	b.ins("bar.sync", "0") // the next tile overwrites the stage
	next()
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{min(tiles, maxLoopBlocks), 1, 1}, Block: [3]int{poolTileOut, 1, 1}, Params: args}
	return b.text(), l, nil
}

// predGE returns a predicate register holding x ≥ n (unsigned).
func predGE(b *builder, x string, n int) string {
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, x, imm(n))
	return p
}
