package frontend

// A mean over a symbolic dim divides by the run's count, which is known only at run time: the
// count is itself a sum, over the same dims, of a splat of ones of the operand's type. The
// reference interpreter sums it at the run's sizes, the passes never fold it at the bound
// (passes' symfold.go), and the compiler folds it over the run's rows beside the operand's sum.
// A mean over static dims divides by their product, a constant, as before.

// symbolicAxes reports whether any of t's axes is symbolic.
func (t *Tensor) symbolicAxes(axes []int) bool {
	for _, a := range axes {
		if _, ok := t.v.Type.Axis(a).IsConst(); t.v.Type.Sym != nil && !ok {
			return true
		}
	}
	return false
}

// symbolicMean is mean over dims of which one at least is symbolic.
func (t *Tensor) symbolicMean(dims []int, keep bool) *Tensor {
	count := t.scalar(1).reduce("reduce_sum", "mean", dims, keep)
	return t.reduce("reduce_sum", "mean", dims, keep).Div(count)
}

// symbolicLossMean is a loss's mean reduction of symbolic l: its sum over the run's count of
// what the bound's n counts (the samples, or every element), n dividing l's bound element count.
func (l *Tensor) symbolicLossMean(n int) *Tensor {
	all := l.v.Type.Shape.NumElements()
	if n <= 0 || all%n != 0 {
		l.s.failf("mean: %d samples do not divide %s", n, named(l, "the loss"))
	}
	count := l.scalar(1).Sum()
	if all != n {
		count = count.DivScalar(float64(all / n))
	}
	return l.Sum().Div(count)
}
