// Package gemv decides the shape of the GEMV template: the matrix–vector products of decoding
// (a dot_general whose non-weight operand has at most MaxM rows, e.g. GPT-2's x[1,3072]·W[3072,768])
// run with enough blocks to fill the GPU instead of the 128×128 output tiles of a GEMM, which
// launch N/128 blocks for such a product.
//
// A block computes Cols consecutive result columns of every row for one batch element and one
// slice of the contracting dim; Splits slices split K across blocks when the column tiles alone
// are fewer than the SMs, and the last block of a tile to finish (an integer ticket) sums the
// slices' partials in slice order: deterministic, no float atomics.
//
// The decisions live here, apart from the code that emits the kernel, because two packages must
// agree on them: codegen/ptx generates the kernel from the Plan, and the passes' cost model
// counts its blocks and scratch traffic from the same Plan.
//
//	p, ok := gemv.Of(dot) // x[1,3072]·W[3072,768], f32
//	// p.Tiles = 24, p.Splits = 10, p.KPer = 320: 240 blocks of 256 threads
package gemv
