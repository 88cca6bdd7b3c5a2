package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// conv2d as an implicit GEMM on the matmul core: M = N·OH·OW output pixels, N = O output
// channels, K = C·KH·KW taps. The weights [O, C, KH, KW] are the GEMM's B as they lie in memory
// ([O, K], k contiguous); A is never built: each copy into shared memory computes its image
// address from (pixel, tap) and zero-fills taps in the padding. Copies take consecutive pixels
// across a warp, so stride-1 convolutions read the image coalesced.
type convSpec struct {
	groups         int // each group is one GEMM of the batch (blockIdx.z)
	n, c, h, w     int
	o, kh, kw      int
	oh, ow         int
	stride, pad, d [2]int
	// pool is the pooling the epilogue ends in (nil if none), with window win: the GEMM's rows
	// are then enumerated window-major (pixel).
	pool *ir.Value
	win  [2]int
}

func convGEMM(v *ir.Value) (*matmul, error) {
	x, wt := v.Args[0].Type.Shape, v.Args[1].Type.Shape
	two := func(name string, def int) [2]int {
		if s := v.Attrs.Ints(name); s != nil {
			return [2]int{s[0], s[1]}
		}
		return [2]int{def, def}
	}
	cs := &convSpec{groups: v.Attrs.Int("groups", 1), n: x[0], c: wt[1], h: x[2], w: x[3], o: wt[0], kh: wt[2], kw: wt[3],
		oh: v.Type.Shape[2], ow: v.Type.Shape[3], stride: two("stride", 1), pad: two("padding", 0), d: two("dilation", 1)}
	// c is the channels per group; group g reads image channels g·c.. and weight rows g·og...
	k := cs.c * cs.kh * cs.kw
	og := cs.o / cs.groups
	// The image side is addressed by copier; its layout only fixes the copy map: consecutive
	// pixels across threads (free dim contiguous).
	lhs := operandLayout{v: v.Args[0], free: cs.n * cs.oh * cs.ow, freeSt: 1, k: k, kSt: cs.oh * cs.ow}
	rhs := operandLayout{v: v.Args[1], free: og, freeSt: k, k: k, kSt: 1}
	var batch ir.Shape
	if cs.groups > 1 {
		if cs.groups > 65535 {
			return nil, fmt.Errorf("conv2d with %d groups exceeds the grid's z limit", cs.groups)
		}
		batch = ir.Shape{cs.groups}
		lhs.batchStrides = []int{cs.c * cs.h * cs.w}
		rhs.batchStrides = []int{og * k}
	}
	return &matmul{M: lhs.free, N: og, K: k, lhs: lhs, rhs: rhs, dot: v, conv: cs, batchShape: batch}, nil
}

// copier returns the image side's addressing (eb-byte elements). The pixel of each copy is fixed per thread (the
// copy map gives every copy of a thread the same pixel f0 and taps kq + dk[i]), so its
// coordinates are computed once.
func (cs *convSpec) copier(mm *matmul, f0, kq string, dk []int, base string, eb int) func(k0 string, i int) (string, string) {
	a, b := mm.a, mm.e.b
	m := a.clamp(f0, mm.M)
	okM := b.reg(rPred)
	b.ins("setp.lt.s32", okM, a.reg(f0), mm.freeBelow(true, mm.M, 0))
	var n, ih0, iw0 string
	if cs.pool == nil {
		plane := cs.oh * cs.ow
		n = a.div(m, plane)
		r := a.rem(m, plane)
		ih0 = a.sub(a.mul(a.div(r, cs.ow), cs.stride[0]), imm(cs.pad[0]))
		iw0 = a.sub(a.mul(a.rem(r, cs.ow), cs.stride[1]), imm(cs.pad[1]))
	} else {
		var oh, ow string
		n, oh, ow = cs.pixel(a, m)
		ih0 = a.sub(a.mul(oh, cs.stride[0]), imm(cs.pad[0]))
		iw0 = a.sub(a.mul(ow, cs.stride[1]), imm(cs.pad[1]))
	}
	img := a.mul(n, cs.c*cs.groups*cs.h*cs.w) // the image's channels are all groups'; base holds the group offset
	return func(k0 string, i int) (string, string) {
		kk := a.add(a.add(k0, kq), imm(dk[i]))
		ok := b.reg(rPred)
		b.ins("setp.lt.s32", ok, a.reg(kk), imm(mm.K))
		b.ins("and.pred", ok, ok, okM)
		taps := cs.kh * cs.kw
		c := a.div(kk, taps)
		t := a.rem(kk, taps)
		ih := a.add(ih0, a.mul(a.div(t, cs.kw), cs.d[0]))
		iw := a.add(iw0, a.mul(a.rem(t, cs.kw), cs.d[1]))
		for _, in := range []struct {
			c string
			n int
		}{{ih, cs.h}, {iw, cs.w}} {
			p := b.reg(rPred)
			b.ins("setp.lt.u32", p, a.reg(in.c), imm(in.n))
			b.ins("and.pred", ok, ok, p)
		}
		off := a.add(img, a.mad(a.mad(c, cs.h, ih), cs.w, iw))
		safe := b.reg(rU32)
		b.ins("selp.b32", safe, a.reg(off), "0", ok)
		o := b.reg(rU64)
		b.ins("mul.wide.u32", o, safe, imm(eb))
		src := b.reg(rU64)
		b.ins("add.s64", src, base, o)
		return src, ok
	}
}

// pixel returns the image n and output coordinates (oh, ow) of GEMM row m when the epilogue
// pools: rows are window-major (the KH·KW rows of one window consecutive, row-major inside it,
// windows in row-major order of the pooled output [N, OH/KH, OW/KW]). Without pooling, rows are
// row-major over [N, OH, OW] (copier, outIndex).
func (cs *convSpec) pixel(a ia, m string) (n, oh, ow string) {
	kh, kw := cs.win[0], cs.win[1]
	t := a.rem(m, kh*kw)
	n, ph, pw := cs.window(a, m)
	return n, a.mad(ph, kh, a.div(t, kw)), a.mad(pw, kw, a.rem(t, kw))
}

// window returns the pooled output position (n, ph, pw) of the window holding GEMM row m.
func (cs *convSpec) window(a ia, m string) (n, ph, pw string) {
	q := a.div(m, cs.win[0]*cs.win[1])
	pooledW := cs.ow / cs.win[1]
	plane := cs.oh / cs.win[0] * pooledW
	r := a.rem(q, plane)
	return a.div(q, plane), a.div(r, pooledW), a.rem(r, pooledW)
}

// outIndex maps GEMM element (pixel m, output channel o across all groups) to the output
// [N, O, OH, OW].
func (cs *convSpec) outIndex(a ia, m, o string) (*index, string) {
	plane := cs.oh * cs.ow
	n := a.div(m, plane)
	r := a.rem(m, plane)
	oh, ow := a.div(r, cs.ow), a.rem(r, cs.ow)
	x := newIndexCoords(ir.Shape{cs.n, cs.o, cs.oh, cs.ow}, []string{n, o, oh, ow})
	lin := a.add(a.mul(a.mad(n, cs.o, o), plane), r)
	x.lin = lin
	return x, lin
}

// pixelLanes returns the output indexes of n consecutive pixels from GEMM row m (x, its index)
// in channel o, a group stored together: consecutive in the NCHW output while they stay in one
// plane, which holds when OH·OW and m are multiples of n. Within one image row they form an
// element group (epilogue operands load as vectors); across rows each lane is its own index.
func (cs *convSpec) pixelLanes(a ia, x *index, m, o string, n int) []*index {
	if cs.ow%n == 0 {
		newGroup(a, x, n, false)
		return x.lanes
	}
	lanes := []*index{x}
	for l := 1; l < n; l++ {
		xl, _ := cs.outIndex(a, a.add(m, imm(l)), o)
		lanes = append(lanes, xl)
	}
	return lanes
}
