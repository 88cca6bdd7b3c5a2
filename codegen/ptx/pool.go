package ptx

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// pool evaluates max_pool2d and avg_pool2d at one output element: the window is unrolled (its
// size is static), out-of-image taps are masked, and the reduction runs in the reference's
// order (row-major over the window; avg sums in f64 and divides once), so results are
// bit-identical to the reference. Pooling is elementwise in its output, so it fuses into loop
// kernels like a movement op.
func (g *gen) pool(v *ir.Value, x *index) (val, error) {
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
	count := ""
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
			xv, err := g.eval(in, newIndexCoords(s, []string{n, c, ih, iw}))
			if err != nil {
				return val{}, err
			}
			var next val
			if isMax {
				next = g.e.fminmax("max", acc, xv)
			} else {
				next, _ = g.e.binary("add", acc, g.e.cast(xv, ir.F64))
			}
			if valid != "" {
				next = g.e.selectVal(val{ir.Bool, valid}, next, acc)
				if !isMax && !v.Attrs.Bool("count_include_pad", true) {
					one := g.e.op(ir.I32, "selp.u32", "1", "0", valid)
					count = a.add(count0(count), one.r)
				}
			}
			acc = next
		}
	}
	if isMax {
		return acc, nil
	}
	div := immF64(float64(kern[0] * kern[1]))
	if count != "" {
		div = g.e.op(ir.F64, "cvt.rn.f64.u32", count).r
	}
	q := g.e.op(ir.F64, "div.rn.f64", g.e.reg(acc), div)
	return g.e.cast(q, d), nil
}

func count0(c string) string {
	if c == "" {
		return "0"
	}
	return c
}
