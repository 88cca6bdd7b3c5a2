package train

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// autocast makes every f32 dot_general and conv2d of g read its operands rounded to dt: each
// operand becomes cast(cast(x, dt), f32). The contraction itself stays f32, so it accumulates in
// f32 and returns f32, which is what autocast's bf16/f16 matmuls do on tensor cores; a code
// generator recognizes the cast pair and loads dt directly. Reductions, softmax, norms, losses
// and the optimizer are untouched and stay f32. An operand used by several contractions is
// rounded once.
func autocast(g *ir.Graph, dt ir.DType) {
	rounded := map[*ir.Value]*ir.Value{}
	var out []*ir.Value
	var fresh []*ir.Value
	mk := func(op string, t ir.Type, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		v := &ir.Value{Op: op, Type: t, Attrs: attrs, Args: args}
		fresh = append(fresh, v)
		return v
	}
	for _, v := range g.Values {
		if (v.Op == "dot_general" || v.Op == "conv2d") && v.Type.DType == ir.F32 {
			for i, a := range v.Args {
				r, ok := rounded[a]
				if !ok {
					low := mk("cast", ir.Type{DType: dt, Shape: a.Type.Shape.Clone()}, ir.Attrs{"to": dt}, a)
					r = mk("cast", a.Type, ir.Attrs{"to": ir.F32}, low)
					low.Pos, r.Pos = v.Pos, v.Pos
					out = append(out, low, r)
					rounded[a] = r
				}
				v.Args[i] = r
			}
		}
		out = append(out, v)
	}
	// Give the new values IDs (Append puts them at the end), then restore the order.
	for _, v := range fresh {
		g.Append(v)
	}
	g.Values = out
}

// unscale divides the gradients of the scaled loss by the scale and reports (as a bool scalar)
// whether any of them is inf or NaN: the sum of g·0 over every gradient is NaN exactly then.
func unscale(e *autodiff.Emitter, grads []*ir.Value, scale *ir.Value) ([]*ir.Value, *ir.Value) {
	inv := e.Div(e.Const(1, scale.Type), scale) // exact: scales are powers of two
	out := make([]*ir.Value, len(grads))
	var probes []*ir.Value
	for i, g := range grads {
		out[i] = e.Mul(g, e.BroadcastScalar(e.Cast(inv, g.Type.DType), g.Type.Shape))
		probes = append(probes, e.Cast(e.SumAll(e.MulScalar(out[i], 0)), ir.F32))
	}
	total := e.AddAll(probes)
	return out, e.Op("ne", nil, total, total)
}

// updateScale is GradScaler.update: back off and restart the count after a non-finite step, grow
// after GrowthInterval clean steps in a row (unless the grown scale would overflow).
func updateScale(e *autodiff.Emitter, ls *LossScale, found, scale, tracker *ir.Value) (*ir.Value, *ir.Value) {
	succ := e.AddScalar(tracker, 1)
	grow := e.Op("eq", nil, succ, e.Const(float64(ls.GrowthInterval), tracker.Type))
	grown := e.MulScalar(scale, ls.Growth)
	finite := e.Op("eq", nil, e.Sub(grown, grown), e.Scalar(0, grown))
	grown = e.Select(finite, grown, scale)
	zero := e.Scalar(0, tracker)
	newScale := e.Select(found, e.MulScalar(scale, ls.Backoff), e.Select(grow, grown, scale))
	newTracker := e.Select(found, zero, e.Select(grow, zero, succ))
	return newScale, newTracker
}
