package passes

import "github.com/gcomp/gcomp/ir"

// fp8Pass keeps dot_generals over fp8 operands as they are for targets from sm_89, whose
// tensor cores multiply fp8 (codegen/ptx's fp8 GEMM: mma.sync m16n8k32 .e4m3/.e5m2, the operands
// read at one byte per element, f32 accumulation rounded to the f16 result), and lowers them
// to f16 GEMMs (lowerFP8Dots) for older ones, which have none (sm_80 and sm_86 refuse fp8
// kernels anyway: their cvt has no fp8 forms). Products of more than 65535 matrices, beyond the
// tiled GEMM's grid, are lowered on every target.
func fp8Pass(st *State) error {
	native := func(v *ir.Value) bool { return st.opt.SM >= 89 && fp8DotBatch(v) <= 65535 }
	st.Graph = lowerFP8DotsUnless(st.Graph, native)
	return nil
}

// fp8DotBatch is the number of matrices fp8 dot v multiplies.
func fp8DotBatch(v *ir.Value) int {
	n := 1
	for _, d := range v.Attrs.Ints("lhs_batch") {
		n *= v.Args[0].Type.Shape[d]
	}
	return n
}

// lowerFP8Dots rewrites each dot_general over fp8 operands (whose result the op table makes f16)
// into the same dot_general over the operands cast to f16. The casts are exact (f16 holds every
// fp8 value) and the reference rounds both forms' f64 sums once to f16, so the meaning is
// unchanged; the f16 GEMM (tensor cores, f32 accumulation) then runs it.
func lowerFP8Dots(g *ir.Graph) *ir.Graph {
	return lowerFP8DotsUnless(g, func(*ir.Value) bool { return false })
}

// lowerFP8DotsUnless is lowerFP8Dots for the fp8 dots keep does not keep.
func lowerFP8DotsUnless(g *ir.Graph, keep func(*ir.Value) bool) *ir.Graph {
	isFP8Dot := func(v *ir.Value) bool { return isFP8Dot(v) && !keep(v) }
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
