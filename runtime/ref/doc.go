// Package ref is the reference interpreter: it runs a verified graph on the host with the op
// table's reference semantics (package ops), and so defines what a graph computes. Every other
// executor (the PTX simulator, a GPU) is checked against it.
//
// Semantics, in short (docs/ops.md has every op): float elementwise ops compute in float64 and
// round once to the result dtype, which for f32 equals computing in f32; f16 and bf16 round to
// nearest even; reductions and contractions accumulate in float64 in a fixed order and round
// once; integers wrap. Run uses all cores for the large ops, over a partition of the work that
// does not depend on the number of threads, so the result has the same bits whatever GOMAXPROCS is.
// Each intermediate goes back to the tensor pool after its last use (tensor.Recycle), so a
// training loop that runs the same step graph again reuses the same buffers instead of faulting in
// fresh memory every step; inputs, parameters and outputs are never recycled. A custom op's Go
// reference function runs under a timeout (SetReferenceTimeout, default one minute): one that
// never returns fails the run with an error naming the op and is left running, since Go cannot
// stop it.
//
//	g := ir.NewGraph("axpy")
//	x := g.Input("x", ir.T(ir.F32, 3), nil)
//	y := g.Input("y", ir.T(ir.F32, 3), nil)
//	g.SetOutput("z", g.Add("add", ir.T(ir.F32, 3), nil, x, y))
//	out, err := ref.Run(g, map[string]*tensor.Tensor{"x": ..., "y": ...}, nil)
package ref
