package nvvm

import (
	"slices"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// The tiled contractions' epilogue: each accumulator through the kernel's other ops to its
// one store, as codegen/ptx's matmul.go does. A dot's result element is addressed by its row
// and column (or its linear index), a conv2d's by its pixel and channel. Four consecutive
// columns (four pixels of a conv2d) form an element group when the result's rows hold whole
// groups: its lanes are computed before they are stored, the first at an address aligned to
// the group, so libNVVM merges the stores.

func (mm *gemm) epilogue() error {
	kg, p := mm.kg, mm.p
	rn := p.ColRegs
	rows, cols := make([]value.Value, 8), make([]value.Value, rn)
	for i := range 8 {
		rows[i] = kg.add(mm.m0, kg.add(kg.mul(mm.rowT, 4), ci(plan.RegTileOffset(i))))
		if i < rn {
			cols[i] = kg.add(mm.n0, kg.add(kg.mul(mm.colT, plan.RegColStep(rn)), ci(plan.RegTileOffset(i))))
		}
	}
	accs := make([]value.Value, len(mm.acc))
	for i, a := range mm.acc {
		accs[i] = kg.b.NewLoad(types.Float, a)
	}
	if p.Conv != nil && p.Conv.Pool != nil {
		// Rows i..i+3 of a thread are consecutive pixels: whole windows.
		for i := 0; i < 8; i += 4 {
			for j := range rn {
				run := []value.Value{accs[i*rn+j], accs[(i+1)*rn+j], accs[(i+2)*rn+j], accs[(i+3)*rn+j]}
				if err := mm.pooledRows(rows[i], cols[j], kg.add(kg.mul(mm.bz, p.N), cols[j]), run); err != nil {
					return err
				}
			}
		}
		return nil
	}
	narrow := true
	for _, o := range kg.g.Outputs {
		narrow = narrow && o.Value.Type.DType.Size() <= 4
	}
	w, wi := 1, 1
	switch {
	case p.Conv == nil && p.ColGroups && narrow:
		w = 4
	case p.Conv != nil && p.Conv.OH*p.Conv.OW%4 == 0 && narrow:
		wi = 4
	}
	var err error
	for i := 0; i < 8; i += wi {
		for j0 := 0; j0 < rn; j0 += w {
			ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, rows[i], mm.mBelow(0)), kg.b.NewICmp(enum.IPredULT, cols[j0], mm.nBelow(0)))
			kg.branch(ok, "store", func() {
				n := max(w, wi)
				lanes := mm.lanesAt(rows[i], cols[j0], n)
				var lanesAcc []value.Value
				for l := range n {
					if wi > 1 {
						lanesAcc = append(lanesAcc, accs[(i+l)*rn+j0])
					} else {
						lanesAcc = append(lanesAcc, accs[i*rn+j0+l])
					}
				}
				if e := mm.bindAndStore(lanes, lanesAcc); e != nil && err == nil {
					err = e
				}
			})
		}
	}
	return err
}

// lanesAt is the result indexes of n GEMM elements from (row, col) stored together: n
// consecutive pixels of a conv2d (col a channel of the group blockIdx.z), n consecutive
// columns of a dot.
func (mm *gemm) lanesAt(row, col value.Value, n int) []*index {
	kg, p := mm.kg, mm.p
	if p.Conv != nil {
		return mm.pixelLanes(row, kg.add(kg.mul(mm.bz, p.N), col), n)
	}
	shape := p.Dot.Type.Shape
	nb := len(p.Batch)
	lin := mm.outLin(mm.bz, row, col) // symcontract_rhs.go
	var lanes []*index
	for l := range n {
		x := newIndexLin(shape, kg.add(lin, ci(l)))
		if p.RowCol {
			for d := range nb {
				x.coord[d] = kg.coord(mm.bidx, d)
			}
			x.coord[nb], x.coord[nb+1] = row, kg.add(col, ci(l))
			if shape[nb] == 1 {
				x.coord[nb] = ci(0)
			}
			if shape[nb+1] == 1 {
				x.coord[nb+1] = ci(0)
			}
		}
		lanes = append(lanes, x)
	}
	return lanes
}

// bindAndStore binds the contraction's value at each lane to its accumulator, computes every
// output at every lane, then stores them.
func (mm *gemm) bindAndStore(lanes []*index, accs []value.Value) error {
	kg := mm.kg
	dot := mm.p.Dot
	if len(lanes) > 1 && (mm.p.Conv == nil || mm.p.Conv.OW%len(lanes) == 0) {
		kg.aligned = map[value.Value]int{kg.lin(lanes[0]): len(lanes)}
		defer func() { kg.aligned = nil }()
	}
	for l, x := range lanes {
		kg.cache[cacheKey{dot, x}] = kg.cast(irg.F32, accs[l], dot.Type.DType)
	}
	return kg.storeLanes(lanes)
}

// outIndex is the output index of conv2d GEMM element (pixel m, channel o across all groups).
func (mm *gemm) outIndex(m, o value.Value) *index {
	kg, cs := mm.kg, mm.p.Conv
	plane := cs.OH * cs.OW
	n, r := kg.div(m, plane), kg.rem(m, plane)
	x := newIndexCoords(mm.p.Dot.Type.Shape, []value.Value{n, o, kg.div(r, cs.OW), kg.rem(r, cs.OW)})
	x.lin = kg.add(kg.mul(kg.add(kg.mul(n, cs.O), o), plane), r)
	return x
}

// pixelLanes is the output indexes of n consecutive pixels from GEMM row m in channel o: in
// one image row they are an element group (consecutive linear indexes, the last coordinate
// counting up); across rows each lane is its own pixel.
func (mm *gemm) pixelLanes(m, o value.Value, n int) []*index {
	kg := mm.kg
	x := mm.outIndex(m, o)
	lanes := []*index{x}
	for l := 1; l < n; l++ {
		if mm.p.Conv.OW%n == 0 {
			c := slices.Clone(x.coord)
			c[3] = kg.add(c[3], ci(l))
			xl := newIndexCoords(x.shape, c)
			// nuw nsw hold (the group lies inside the output, whose element count fits
			// i32) and are what lets libNVVM's vectorizer prove the lanes consecutive
			// when OH·OW is not a power of two (its known bits do not see through the
			// pixel's urem): without them conv3x3's 28×28 planes got four scalar stores.
			lin := kg.b.NewAdd(x.lin, ci(l))
			lin.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNUW, enum.OverflowFlagNSW}
			xl.lin = lin
			lanes = append(lanes, xl)
		} else {
			lanes = append(lanes, mm.outIndex(kg.add(m, ci(l)), o))
		}
	}
	return lanes
}

// pooledRows is the epilogue of a thread's run of consecutive GEMM rows from row (whole
// pooling windows) in column col (channel ch across all groups): each window's pixels through
// the epilogue, the pooling over them in the reference's order (poolTaps), and every output's
// stores: pooled outputs once per window, outputs of the convolution's shape per pixel.
func (mm *gemm) pooledRows(row, col, ch value.Value, accs []value.Value) error {
	kg, p, cs := mm.kg, mm.p, mm.p.Conv
	ww := cs.Win[0] * cs.Win[1]
	pooled := cs.Pool.Type.Shape
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	for t := 0; t < len(accs); t += ww {
		m := kg.add(row, ci(t))
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredULT, m, mm.mBelow(0)), kg.b.NewICmp(enum.IPredULT, col, ci(p.N)))
		kg.branch(ok, "pool", func() {
			n, ph, pw := mm.window(m)
			oh0, ow0 := kg.mul(ph, cs.Win[0]), kg.mul(pw, cs.Win[1])
			xs := make([]*index, ww)
			vals := make([]value.Value, ww)
			for l := range ww {
				xs[l] = newIndexCoords(p.Dot.Type.Shape, []value.Value{n, ch, kg.add(oh0, ci(l/cs.Win[1])), kg.add(ow0, ci(l%cs.Win[1]))})
				vals[l] = kg.cast(irg.F32, accs[t+l], p.Dot.Type.DType)
				kg.cache[cacheKey{p.Dot, xs[l]}] = vals[l]
			}
			// A view of a pre-pool value at the pooled shape (the max_pool2d gradient's slice of
			// each window's first pixel) reaches the convolution at an index of its own: it is
			// the window's pixel with the same coordinates.
			kg.at = map[*irg.Value]func(*index) value.Value{p.Dot: func(x *index) value.Value {
				for l, y := range xs {
					if kg.sameIndex(x, y) {
						return vals[l]
					}
				}
				return nil
			}}
			defer func() { kg.at = nil }()
			xp := newIndexCoords(pooled, []value.Value{n, ch, ph, pw})
			tap := 0
			pv, e := kg.poolTaps(cs.Pool, xp, func(*index) value.Value {
				// The window has no padding: taps come row-major, pixel by pixel.
				v, e := kg.eval(cs.Pool.Args[0], xs[tap])
				keep(e)
				tap++
				return v
			})
			keep(e)
			if e != nil {
				return
			}
			kg.cache[cacheKey{cs.Pool, xp}] = pv
			for oi, o := range kg.g.Outputs {
				if o.Value.Type.Shape.Equal(pooled) {
					v, e := kg.eval(o.Value, xp)
					keep(e)
					if e == nil {
						kg.store(o.Value.Type.DType, kg.outPtr[oi], kg.lin(xp), v)
					}
					continue
				}
				for _, x := range xs { // a pre-pool value another kernel reads
					v, e := kg.eval(o.Value, x)
					keep(e)
					if e == nil {
						kg.store(o.Value.Type.DType, kg.outPtr[oi], kg.lin(x), v)
					}
				}
			}
		})
	}
	return err
}
