package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// Pooling in a staged kernel (tile.go): the windows of a tile's tileOut consecutive outputs all
// lie in one contiguous range of the input (the first output's first tap to the last output's
// last tap, see poolSpan), which the block reads with consecutive threads on consecutive
// elements — coalesced whatever the stride — and every thread then pools its output from shared
// memory. Per-thread window reads straight from global memory touch a sector for every
// stride·4 bytes a warp's 32 outputs advance, several times per window row.

// maxPoolTileBytes caps the staged range (a wide image row with a window taller than 1 makes a
// range far longer than the outputs it serves); larger ones keep per-thread window reads.
const maxPoolTileBytes = 24 << 10

type poolTile struct {
	pool *ir.Value // max_pool2d or avg_pool2d, read only at the output's linear index
	span int       // elements of the pool's input one tile reads, at most
	slot int       // bytes per staged element
	lo   string    // register: the tile's first staged input index
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

// poolSpan is the longest input range a tile of tileOut outputs reads. The range depends on
// where the tile starts in a plane, which repeats every lcm(plane, tile) outputs.
func poolSpan(v *ir.Value, n int) int {
	w := windowOf(v)
	plane := w.outH * w.outW
	period := plane / gcd(plane, tileOut) // tiles before the starts repeat
	span := 0
	for t := 0; t < ceilDiv(n, tileOut) && t <= period; t++ {
		o0, o1 := t*tileOut, min(n, (t+1)*tileOut)-1
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

// pool stage: phase 1 copies the input range [first tap of the tile's first output, last tap
// of its last output]; phase 2 pools each output from it.
func (pt *poolTile) value() *ir.Value { return pt.pool }
func (pt *poolTile) elems() int       { return pt.span }
func (pt *poolTile) slotBytes() int   { return pt.slot }
func (pt *poolTile) describe() string {
	return fmt.Sprintf("the windows' input range, at most %d elements", pt.span)
}

func (pt *poolTile) load(gn *gen, o0, last, tid string, slot func(i string) string) error {
	a := gn.a
	w := windowOf(pt.pool)
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
	pt.lo = bound(o0, false)
	end := a.reg(a.add(bound(last, true), imm(1)))
	in := pt.pool.Args[0]
	return gn.stageRange(in, pt.lo, end, tid, func(q string) string { return slot(a.sub(q, pt.lo)) })
}

func (pt *poolTile) at(gn *gen, o, _ string, slot func(i string) string) (val, error) {
	d := pt.pool.Args[0].Type.DType
	return gn.poolTaps(pt.pool, newIndexLin(pt.pool.Type.Shape, o), func(_, _ int, y *index) val {
		return gn.loadStaged(d, slot(gn.a.sub(y.getLin(gn.a), pt.lo)))
	})
}
