package train

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// unscale divides the gradients of the scaled loss by the scale and reports (as a bool scalar)
// whether any of them is inf or NaN: the sum of g·0 over every gradient is NaN exactly then.
func unscale(e *autodiff.Emitter, grads []*ir.Value, scale *ir.Value) ([]*ir.Value, *ir.Value) {
	inv := e.Div(e.Const(1, scale.Type), scale) // exact: scales are powers of two
	out := make([]*ir.Value, len(grads))
	var probes []*ir.Value
	for i, g := range grads {
		out[i] = e.Mul(g, e.BroadcastScalarTo(e.Cast(inv, g.Type.DType), g.Type))
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
