package ptx

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// A conv2d kernel whose epilogue ends in max_pool2d or avg_pool2d (fused by the passes when the
// pooling windows tile the convolution's output: window = stride, no padding, OH and OW
// multiples of the window, 2 or 4 pixels per window). The GEMM's rows (pixels) are enumerated
// window-major (convSpec.pixel), so a window's pixels are consecutive rows; both tiled
// templates give each thread runs of 4 consecutive rows starting at multiples of 4 in one
// output channel (the FFMA template's rows tx·4.. and 64+tx·4.., the tensor-core template's
// staged epilogue 4·(lane%4)..), so every window lies in one thread's registers and the pooling
// needs no shuffles and no shared memory: the thread applies the epilogue to each pixel of the
// window, reduces it in the reference's order (poolTaps: row-major over the window, max with
// NaN propagation and max(-0, +0) = +0, avg summed in f64 and divided once), and stores the
// pooled value once. Outputs of the convolution's shape (pre-pool values another kernel needs)
// are stored per pixel as well.

// convPool returns the pooling g's conv2d epilogue ends in and its window, or nil if there is
// none; an error if the pooling is not one the templates fuse.
func convPool(g *ir.Graph, dot *ir.Value) (*ir.Value, [2]int, error) {
	var pool *ir.Value
	for _, v := range live(g) {
		if v.Op == "max_pool2d" || v.Op == "avg_pool2d" {
			if pool != nil {
				return nil, [2]int{}, fmt.Errorf("two poolings after a %s", dot.Op)
			}
			pool = v
		}
	}
	if pool == nil {
		return nil, [2]int{}, nil
	}
	k, s := pool.Attrs.Ints("kernel"), pool.Args[0].Type.Shape
	st, pad := pool.Attrs.Ints("stride"), pool.Attrs.Ints("padding")
	switch {
	case dot.Op != "conv2d" || !s.Equal(dot.Type.Shape):
		return nil, [2]int{}, fmt.Errorf("%s of %s after a %s is not a supported fusion", pool.Op, s, dot.Op)
	case st != nil && !slices.Equal(st, k), pad != nil && slices.ContainsFunc(pad, func(p int) bool { return p != 0 }),
		k[0]*k[1] != 2 && k[0]*k[1] != 4, s[2]%k[0] != 0, s[3]%k[1] != 0:
		return nil, [2]int{}, fmt.Errorf("%s whose windows do not tile the conv2d's output %s (kernel %v, stride %v, padding %v) is not a supported fusion", pool.Op, s, k, st, pad)
	}
	return pool, [2]int{k[0], k[1]}, nil
}

// pooledRows runs the epilogue of a thread's run of consecutive GEMM rows row, row+1, ...
// (len(accs) of them, row a multiple of the window size) in output channel col of the group
// (ch across all groups): each window's pixels through the epilogue, the pooling over them, and
// every output's stores.
func (mm *matmul) pooledRows(row, col, ch string, accs []val) error {
	b, a, cs := mm.e.b, mm.a, mm.conv
	ww := cs.win[0] * cs.win[1]
	pooled := cs.pool.Type.Shape
	for t := 0; t < len(accs); t += ww {
		skip := b.label("skip")
		m := a.reg(a.add(row, imm(t)))
		okm, okn := b.reg(rPred), b.reg(rPred)
		b.ins("setp.lt.u32", okm, m, mm.freeBelow(true, mm.M, 0))
		b.ins("setp.lt.u32", okn, a.reg(col), imm(mm.N))
		ok := b.reg(rPred)
		b.ins("and.pred", ok, okm, okn)
		b.braIf("!"+ok, skip)
		mm.reset()
		// Pixel (i, j) of the window is row m + i·KW + j.
		n, ph, pw := cs.window(a, m)
		oh0, ow0 := a.mul(ph, cs.win[0]), a.mul(pw, cs.win[1])
		xs := make([]*index, ww)
		accOf := map[*index]val{}
		for l := range ww {
			xs[l] = newIndexCoords(mm.dot.Type.Shape, []string{n, ch, a.add(oh0, imm(l/cs.win[1])), a.add(ow0, imm(l%cs.win[1]))})
			accOf[xs[l]] = mm.e.cast(accs[t+l], mm.dot.Type.DType)
		}
		// A view of a pre-pool value at the pooled shape (the max_pool2d gradient's slice of
		// each window's first pixel) reaches the convolution at an index of its own: it is the
		// window's pixel with the same coordinates.
		mm.bound[mm.dot] = func(x *index) val {
			if v, ok := accOf[x]; ok {
				return v
			}
			for _, y := range xs {
				if sameIndex(a, x, y) {
					return accOf[y]
				}
			}
			if mm.err == nil {
				mm.err = fmt.Errorf("%s: an output reads the %s outside its pooling window", mm.kname, mm.dot.Op)
			}
			return accOf[xs[0]]
		}
		// Values the same at every pixel of the window (a per-channel bias) are evaluated once.
		for _, v := range live(mm.kernelGraph) {
			if v.Op == "broadcast_in_dim" && v.Type.Shape.Equal(mm.dot.Type.Shape) && !slices.Contains(v.Attrs.Ints("dims"), 2) && !slices.Contains(v.Attrs.Ints("dims"), 3) {
				r, err := mm.eval(v, xs[0])
				if err != nil {
					return err
				}
				for _, x := range xs[1:] {
					mm.cache[cacheKey{v, x}] = r
				}
			}
		}
		xp := newIndexCoords(pooled, []string{n, ch, ph, pw})
		var tapErr error
		pv, err := mm.poolTaps(cs.pool, xp, func(kh, kw int, _ *index) val {
			v, err := mm.eval(cs.pool.Args[0], xs[kh*cs.win[1]+kw])
			tapErr = cmp.Or(tapErr, err)
			return v
		})
		if err = cmp.Or(err, tapErr); err != nil {
			return err
		}
		mm.bound[cs.pool] = func(*index) val { return pv }
		for oi, o := range mm.kernelGraph.Outputs {
			if o.Value.Type.Shape.Equal(pooled) {
				v, err := mm.eval(o.Value, xp)
				if err != nil {
					return err
				}
				mm.store(o.Value, mm.outPtr[oi], xp.getLin(a), v)
				continue
			}
			for _, x := range xs { // a pre-pool value another kernel reads
				v, err := mm.eval(o.Value, x)
				if err != nil {
					return err
				}
				mm.store(o.Value, mm.outPtr[oi], x.getLin(a), v)
			}
		}
		delete(mm.bound, cs.pool)
		mm.reset()
		b.place(skip)
	}
	return nil
}
