package ptx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
)

// pool evaluates max_pool2d and avg_pool2d at one output element: the window is unrolled (its
// size is static), out-of-image taps are masked, and the reduction runs in the reference's
// order (row-major over the window; avg sums in f64 and divides once), so results are
// bit-identical to the reference. Pooling is elementwise in its output, so it fuses into loop
// kernels like a movement op.
func (g *gen) pool(v *ir.Value, x *index) (val, error) {
	return g.poolTaps(v, x, nil)
}

// poolTaps is pool with an optional source of taps: tap(kh, kw, y) returns the input element of
// window position (kh, kw), at index y of the input (coordinates clamped into the image), when
// the caller holds it elsewhere (a vector load, shared memory); nil reads it at its index.
func (g *gen) poolTaps(v *ir.Value, x *index, tap func(kh, kw int, y *index) val) (val, error) {
	a := g.a
	in := v.Args[0]
	s := in.Type.Shape // [N, C, H, W]
	kern := v.Attrs.Ints("kernel")
	stride := v.Attrs.Ints("stride")
	if stride == nil {
		stride = kern
	}
	pad := v.Attrs.Ints("padding")
	if pad == nil {
		pad = []int{0, 0}
	}
	isMax := v.Op == "max_pool2d"
	d := v.Type.DType
	n, c := x.getCoord(a, 0), x.getCoord(a, 1)
	ih0 := a.sub(a.mul(x.getCoord(a, 2), stride[0]), imm(pad[0]))
	iw0 := a.sub(a.mul(x.getCoord(a, 3), stride[1]), imm(pad[1]))
	var acc val
	if isMax {
		acc = g.e.constVal(d, math.Inf(-1))
	} else {
		acc = g.e.constVal(ir.F64, 0)
	}
	count := "0" // valid taps, when padding does not count
	for kh := range kern[0] {
		for kw := range kern[1] {
			ih, iw := a.add(ih0, imm(kh)), a.add(iw0, imm(kw))
			valid := ""
			if pad[0] > 0 || pad[1] > 0 {
				p, q := g.inRange(ih, s[2]), g.inRange(iw, s[3])
				valid = g.e.b.reg(rPred)
				g.e.b.ins("and.pred", valid, p, q)
				ih, iw = a.clamp(ih, s[2]), a.clamp(iw, s[3])
			}
			var xv val
			y := newIndexCoords(s, []string{n, c, ih, iw})
			if tap != nil {
				xv = tap(kh, kw, y)
			} else {
				var err error
				if xv, err = g.eval(in, y); err != nil {
					return val{}, err
				}
			}
			var next val
			switch {
			case isMax && kh+kw == 0 && valid == "":
				next = xv // max(-inf, x) is x, NaN and -0 included
			case isMax:
				next = g.e.fminmax("max", acc, xv)
			default:
				next, _ = g.e.binary("add", acc, g.e.cast(xv, ir.F64))
			}
			if valid != "" {
				next = g.e.selectVal(val{ir.Bool, valid}, next, acc)
				if !isMax && !v.Attrs.Bool("count_include_pad", true) {
					one := g.e.op(ir.I32, "selp.u32", "1", "0", valid)
					count = a.add(count, one.r)
				}
			}
			acc = next
		}
	}
	if isMax {
		return acc, nil
	}
	div := immF64(float64(kern[0] * kern[1]))
	if n := kern[0] * kern[1]; count == "0" && n&(n-1) == 0 {
		// Dividing by a power of two is multiplying by its reciprocal, exactly (both round the
		// same real number); div.rn.f64 is a long sequence that adds register pressure.
		q := g.e.op(ir.F64, "mul.rn.f64", g.e.reg(acc), immF64(1/float64(n)))
		return g.e.cast(q, d), nil
	}
	if count != "0" {
		div = g.e.op(ir.F64, "cvt.rn.f64.u32", g.e.reg(val{ir.I32, count})).r
	}
	q := g.e.op(ir.F64, "div.rn.f64", g.e.reg(acc), div)
	return g.e.cast(q, d), nil
}

// poolGroup evaluates a pool at lane x of an element group whose lanes are consecutive output
// columns: with no padding and the window as wide as the stride, the group's windows tile
// n·stride consecutive input columns, loaded with vector accesses once per window row and shared
// by the lanes. ok is false where that does not apply.
func (g *gen) poolGroup(v *ir.Value, x *index) (r val, ok bool, err error) {
	in := v.Args[0]
	if in.Op != ir.OpInput && in.Op != ir.OpParam {
		return val{}, false, nil
	}
	lead := x.leader
	n := len(lead.lanes)
	kern := v.Attrs.Ints("kernel")
	stride := v.Attrs.Ints("stride")
	if stride == nil {
		stride = kern
	}
	pad := v.Attrs.Ints("padding")
	s := in.Type.Shape
	width := n * stride[1]
	// The loads start at a multiple of width elements and go in vectors of up to four: their
	// addresses are aligned to their size only when width is a power of two (rows of 30 floats
	// in windows of 3 gave width 6 and 16-byte loads at 8-byte-aligned addresses).
	if (pad != nil && (pad[0] != 0 || pad[1] != 0)) || kern[1] != stride[1] || s[3]%width != 0 ||
		width&(width-1) != 0 || width*in.Type.DType.Size() > 64 || lead.lanes[1].parent != lead {
		return val{}, false, nil
	}
	a := g.a
	j := x.laneOf()
	rows := make([][]val, kern[0])
	for kh := range rows {
		ih := a.add(a.mul(lead.getCoord(a, 2), stride[0]), imm(kh))
		c := []string{lead.getCoord(a, 0), lead.getCoord(a, 1), ih, a.mul(lead.getCoord(a, 3), stride[1])}
		lin := newIndexCoords(s, c).getLin(a)
		lk := fmt.Sprintf("pool %d %d %s", v.ID, kh, lin)
		if vals, done := g.poolRows[lk]; done {
			rows[kh] = vals
			continue
		}
		rows[kh] = g.vectorLoad(in, lin, width)
		g.poolRows[lk] = rows[kh]
	}
	r, err = g.poolTaps(v, x, func(kh, kw int, _ *index) val { return rows[kh][j*stride[1]+kw] })
	return r, true, err
}
