package train

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// autocast runs every f32 dot_general and conv2d of g in dt, as torch.autocast does: the
// operands are cast to dt, the contraction computes in dt (accumulating in f32 on tensor cores:
// mma.sync with f32 accumulators, rounded once to dt at the store; the reference accumulates in
// f64 and rounds once) and its result is cast back to f32 for what follows. Reductions,
// softmax, norms, losses and the optimizer are untouched and stay f32; the master weights stay
// f32 (each is cast once per step, however many contractions read it). It returns, for each
// contraction, the f32 value that now stands for its result (gradients the caller holds).
func autocast(g *ir.Graph, dt ir.DType) map[*ir.Value]*ir.Value {
	low := map[*ir.Value]*ir.Value{}  // f32 value → its dt cast
	back := map[*ir.Value]*ir.Value{} // contraction → the f32 cast of its result
	var out, fresh []*ir.Value
	mk := func(v *ir.Value) *ir.Value {
		fresh = append(fresh, v)
		out = append(out, v)
		return v
	}
	for _, v := range g.Values {
		for i, a := range v.Args {
			if b := back[a]; b != nil {
				v.Args[i] = b
			}
		}
		if (v.Op != "dot_general" && v.Op != "conv2d") || v.Type.DType != ir.F32 {
			out = append(out, v)
			continue
		}
		for i, a := range v.Args {
			l := low[a]
			if l == nil {
				l = mk(&ir.Value{Op: "cast", Type: ir.Type{DType: dt, Shape: a.Type.Shape.Clone()}, Attrs: ir.Attrs{"to": dt}, Args: []*ir.Value{a}, Pos: v.Pos})
				low[a] = l
			}
			v.Args[i] = l
		}
		f32 := v.Type
		v.Type = ir.Type{DType: dt, Shape: f32.Shape.Clone()}
		out = append(out, v)
		back[v] = mk(&ir.Value{Op: "cast", Type: f32, Attrs: ir.Attrs{"to": ir.F32}, Args: []*ir.Value{v}, Pos: v.Pos})
	}
	for i, o := range g.Outputs {
		if b := back[o.Value]; b != nil {
			g.Outputs[i].Value = b
		}
	}
	// Give the new values IDs (Append puts them at the end), then restore the order.
	for _, v := range fresh {
		g.Append(v)
	}
	g.Values = out
	return back
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
