package gemv

import "github.com/gcomp/gcomp/ir"

const (
	// MaxM is the most rows (of the operand that is not the weight) the template takes. Each
	// thread holds MaxM·8 accumulators at most; at 8 rows a 128×128 tile still wastes 15/16 of
	// its multiply-adds, and the product is memory-bound either way.
	MaxM = 8
	// Threads per block, and result columns per block.
	Threads = 256
	Cols    = 32
	// A block's slice of K is a multiple of KAlign (whole 128-bit vectors of 2-byte elements)
	// and at least MinKPer elements, so a split block still streams enough of the weight to
	// hide its latency and its partials stay a small part of its traffic.
	KAlign  = 64
	MinKPer = 128
	// MinWeight is the fewest weight elements (K·N per batch element) the template takes.
	// Smaller products are bound by their launch (a 16 KB f32 weight streams in 5 ns at
	// 3.35 TB/s; a launch costs 875 ns in a CUDA graph) whichever template runs them, and stay
	// in the templates that served them.
	MinWeight = 4096
	// SMs is the H100 SXM's count the split aims to fill (as the cost model): blocks are cut
	// until there are TargetBlocks, two per SM.
	SMs          = 132
	TargetBlocks = 2 * SMs
)

// Plan is the GEMV launch of C[b] = A[b]·B[b], M×K times K×N for each of Batch elements: grid
// (Tiles, Splits, Batch) of Threads-thread blocks, block (x, y, z) computing columns
// [x·Cols, x·Cols+Cols) of batch element z over k in [y·KPer, min(K, y·KPer+KPer)).
type Plan struct {
	M, N, K, Batch int
	Tiles, Splits  int
	KPer           int
}

// Of returns the plan of dot if the GEMV template takes it: a dot_general on f32, f16 or bf16
// operands, each a buffer or a view of one (transpose, slice, broadcast_in_dim, reshape; the
// direct template takes operands computed inside the kernel), whose lhs has at most MaxM rows
// (its free dims' product), with elements and at least MinWeight weight elements.
// The weight may also be a dequantize of views (int8 or packed int4 weights, docs/ops.md),
// which the template reads as integers and dequantizes in registers. The lhs may also be a
// norm of buffers' rows (RowPrologue), which each block computes before its k loop; such a
// product is planned by NewPrologue.
func Of(dot *ir.Value) (Plan, bool) {
	p, ok := Fits(dot)
	if !ok || !isView(dot.Args[1]) && !quantizedView(dot.Args[1]) {
		return Plan{}, false
	}
	if isView(dot.Args[0]) {
		return p, true
	}
	if RowPrologue(dot) == nil {
		return Plan{}, false
	}
	return NewPrologue(p.M, p.N, p.K, p.Batch), true
}

// Fits is Of without the operands' check: the plan of dot if the template takes a product of
// its dtypes and sizes, whatever computes its operands. The passes ask it of the source graph,
// where the operands are not buffers yet.
func Fits(dot *ir.Value) (Plan, bool) {
	if dot.Op != "dot_general" || len(dot.Args) != 2 {
		return Plan{}, false
	}
	for _, a := range []*ir.Value{dot.Args[0], dot.Args[1], dot} {
		if d := a.Type.DType; d != ir.F32 && d != ir.F16 && d != ir.BF16 {
			return Plan{}, false
		}
	}
	lhs, rhs := dot.Args[0].Type.Shape, dot.Args[1].Type.Shape
	lb, lc := dot.Attrs.Ints("lhs_batch"), dot.Attrs.Ints("lhs_contract")
	rb, rc := dot.Attrs.Ints("rhs_batch"), dot.Attrs.Ints("rhs_contract")
	batch, m, k := 1, 1, 1
	for d := range lhs {
		switch {
		case contains(lb, d):
			batch *= lhs[d]
		case contains(lc, d):
			k *= lhs[d]
		default:
			m *= lhs[d]
		}
	}
	n := 1
	for d := range rhs {
		if !contains(rb, d) && !contains(rc, d) {
			n *= rhs[d]
		}
	}
	if m > MaxM || m*n*batch == 0 || k*n < MinWeight || batch > 65535 {
		return Plan{}, false
	}
	return New(m, n, k, batch), true
}

// New plans an M×K·K×N product of batch elements.
func New(m, n, k, batch int) Plan { return plan(m, n, k, batch, TargetBlocks) }

// NewPrologue plans a product whose lhs is a row prologue (RowPrologue): every block reads the
// lhs's M·K elements from L2 before its k loop (once per reduction, or once when StagedRows),
// whatever its slice of K, so the split aims at one block per SM (SMs) rather than two; a GEMV
// that has as many tiles as SMs is not split either way.
func NewPrologue(m, n, k, batch int) Plan { return plan(m, n, k, batch, SMs) }

// plan cuts K until the launch has target blocks or its slices reach MinKPer.
func plan(m, n, k, batch, target int) Plan {
	p := Plan{M: m, N: n, K: k, Batch: batch, Tiles: ceilDiv(n, Cols), Splits: 1}
	tiles := p.Tiles * batch
	if tiles < SMs {
		p.Splits = max(1, min(ceilDiv(target, tiles), k/MinKPer, 65535))
	}
	p.KPer = max(KAlign, roundUp(ceilDiv(k, p.Splits), KAlign))
	p.Splits = max(1, ceilDiv(k, p.KPer))
	return p
}

// Grid is the launch's grid.
func (p Plan) Grid() [3]int { return [3]int{p.Tiles, p.Splits, p.Batch} }

// Blocks is the number of blocks launched.
func (p Plan) Blocks() int { return p.Tiles * p.Splits * p.Batch }

// PartialFloats is how many f32 partial sums a split launch keeps in scratch: M·Cols per block,
// laid out [batch][tile][split][row][column]. 0 without a split.
func (p Plan) PartialFloats() int {
	if p.Splits == 1 {
		return 0
	}
	return p.Blocks() * p.M * Cols
}

// ScratchBytes is the zeroed scratch a launch needs: the partials, then one u32 ticket counter
// per (batch, tile), rounded to 8 bytes.
func (p Plan) ScratchBytes() int {
	if p.Splits == 1 {
		return 0
	}
	return roundUp(4*p.PartialFloats()+4*p.Tiles*p.Batch, 8)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// isView reports whether v is a graph input or param read through view ops only.
func isView(v *ir.Value) bool {
	for ; v.Op != ir.OpInput && v.Op != ir.OpParam; v = v.Args[0] {
		if !isViewOp(v.Op) {
			return false
		}
	}
	return true
}

// quantizedView reports whether v is a dequantize (ops.DequantizeOp) whose operands are views,
// or an f32 one cast to a 16-bit dtype (the template rounds the f32 product once more).
func quantizedView(v *ir.Value) bool {
	if v.Op == "cast" && v.Args[0].Op == "dequantize" && v.Args[0].Type.DType == ir.F32 {
		v = v.Args[0]
	}
	if v.Op != "dequantize" {
		return false
	}
	for _, a := range v.Args {
		if !isView(a) {
			return false
		}
	}
	return true
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
