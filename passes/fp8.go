package passes

import "github.com/gcomp/gcomp/ir"

// lowerFP8Dots rewrites each dot_general over fp8 operands (whose result the op table makes f16)
// into the same dot_general over the operands cast to f16. The casts are exact (f16 holds every
// fp8 value) and the reference rounds both forms' f64 sums once to f16, so the meaning is
// unchanged; the f16 GEMM (tensor cores, f32 accumulation) then runs it. sm_89/sm_90's fp8
// mma.sync (m16n8k32 .e4m3/.e5m2) would read half the bytes; it is not written yet.
func lowerFP8Dots(g *ir.Graph) *ir.Graph {
	has := false
	for _, v := range g.Values {
		has = has || isFP8Dot(v)
	}
	if !has {
		return g
	}
	c := g.Clone()
	wide := map[*ir.Value]*ir.Value{} // fp8 operand → its f16 cast
	var out, fresh []*ir.Value
	for _, v := range c.Values {
		if isFP8Dot(v) {
			for i, a := range v.Args {
				w := wide[a]
				if w == nil {
					w = &ir.Value{Op: "cast", Type: ir.Type{DType: ir.F16, Shape: a.Type.Shape.Clone()}, Attrs: ir.Attrs{"to": ir.F16}, Args: []*ir.Value{a}, Pos: v.Pos}
					wide[a] = w
					fresh = append(fresh, w)
					out = append(out, w)
				}
				v.Args[i] = w
			}
		}
		out = append(out, v)
	}
	for _, v := range fresh {
		c.Append(v) // IDs; the order is restored below
	}
	c.Values = out
	return c
}

func isFP8Dot(v *ir.Value) bool {
	return v.Op == "dot_general" && len(v.Args) == 2 && v.Args[0].Type.DType.IsFP8()
}
