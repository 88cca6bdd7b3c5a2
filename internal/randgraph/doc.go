// Package randgraph generates random valid graphs for property tests and fuzz targets: any
// package that transforms or executes an ir.Graph can check itself against the reference
// interpreter on graphs nobody wrote by hand.
//
// Graph draws everything from the *rand.Rand it is given, so a seed names a graph:
//
//	g := randgraph.Graph(rand.New(rand.NewPCG(seed, 7)))
//
// and a fuzz target turns its input bytes into a seed with FromBytes. The graphs are small
// (a few to a few dozen values, dimensions up to 4) so that the reference interpreter runs them
// in microseconds; every op class of the op table appears (elementwise, reduce, movement,
// contraction, other), in the combinations the compiler's passes care about: chains that fuse,
// reductions spread back over their rows, contraction epilogues, views of views, masks built
// from iotas, and constants that simplification rewrites away.
//
// The package depends only on ir and ops. Changing what it generates for a seed changes every
// test that uses it, so the golden file testdata/graphs.txtar pins a few seeds' graphs.
package randgraph
