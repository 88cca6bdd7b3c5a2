// Package randgraph generates random valid graphs for property tests and fuzz targets: any
// package that transforms or executes an ir.Graph can check itself against the reference
// interpreter on graphs nobody wrote by hand.
//
// Graph draws everything from the *rand.Rand it is given, so a seed names a graph:
//
//	g := randgraph.Graph(rand.New(rand.NewPCG(seed, 7)))
//
// and a fuzz target turns its input bytes into a seed with FromBytes. The graphs are small
// enough that the reference interpreter and the PTX simulator run them in milliseconds.
//
// Each graph is of one kind, which is its name (Kinds lists them; kinds.go has the weights):
//
//   - mixed (randgraph.go): every op class of the op table together (elementwise, reduce,
//     movement, contraction, other), in the combinations the compiler's passes care about: chains
//     that fuse, reductions spread back over their rows, contraction epilogues, views of views,
//     masks built from iotas, constants that simplification rewrites away, casts through every
//     dtype, inputs of every dtype and scalars.
//   - contraction (contract.go): dot_generals with batch, contracting and free dims in any order,
//     half of them with a vector side (one operand without free dims, the other with two or
//     more), operands and epilogue operands built by chains of views (builder.go: broadcasts with
//     repeated dims, reshapes, transposes, strided slices, pads) over every numeric dtype.
//   - zero_size, scalar (zero.go): values with a zero dim and what turns them back into elements
//     (pads, reductions to their identity, concats, contractions with an empty dim, gathers of
//     empty rows between small kernels); rank-0 values.
//   - inplace, split, persistent (chains.go): elementwise chains reading more buffers than the
//     fusion reads limit, so that temps are placed in place of each other; full reductions of
//     33000 to 40000 elements (split over blocks) feeding each other; runs of three or more
//     small kernels with pooling and gather stages over rows of odd length (30, 15, 7).
//   - extremes (extremes.go): integer inputs whose range reaches their dtype's ends (i64 as wide
//     as [-2^62, 2^62] and wider), constants at the ends, min, max, prod and sum reductions,
//     empty ones among them.
//
// Symbolic (symbolic.go) is separate from Graph's kinds: graphs with bounded dims
// (docs/dynamic.md) whose values lead with their rows, the class the compiler builds once for
// every size, some with one more op that the compiler must refuse, which it reports.
//
// The targeted kinds exist because a generator written independently from docs/ir.md and
// docs/ops.md found defects of each of them that the mixed graph alone had missed. They build
// only what those documents allow, and panic if ops.Infer refuses it (the op table disagreeing
// with its documentation). The code generation target and TF32 are the callers' to vary.
//
// The package depends only on ir and ops (and testing, for CheckCorpusKinds). Changing what it generates for a seed changes every
// test that uses it, so the golden file testdata/graphs.txtar pins a few seeds' graphs, and the
// fuzz targets' corpora hold an input per kind (CheckCorpusKinds).
package randgraph
