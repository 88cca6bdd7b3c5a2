package plan

import (
	"math"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// The decisions another producer of the same kernels (codegen/nvvm) shares with this one, so
// that both give a kernel the same name, parameters and tiling.

// LoopPlan is the loop template's tiling: each work item is a group of V consecutive output
// elements (flat: groups may straddle rows, as only same-shape elementwise work is fused), and
// the launch that covers the work items with grid-stride threads.
func LoopPlan(g *ir.Graph) (v int, flat bool, grid, block [3]int) {
	shape := g.Outputs[0].Value.Type.Shape
	v, flat = VectorWidth(g, shape)
	n := shape.NumElements()
	work := max(1, n/v, n%v)
	return v, flat, [3]int{min(ceilDiv(work, LoopBlock), MaxLoopBlocks), 1, 1}, [3]int{LoopBlock, 1, 1}
}

// Params lists a kernel's parameters in declaration order: its graph's inputs, params, outputs,
// then the error word if the kernel gathers (templates that need scratch buffers append them).
func Params(g *ir.Graph) []Arg {
	var args []Arg
	for i, v := range g.Inputs() {
		args = append(args, Arg{Kind: ArgInput, Index: i, Name: v.Name})
	}
	for i, v := range g.Params() {
		args = append(args, Arg{Kind: ArgParam, Index: i, Name: v.Name})
	}
	for i, o := range g.Outputs {
		args = append(args, Arg{Kind: ArgOutput, Index: i, Name: o.Name})
	}
	if len(GatherSites(g)) > 0 {
		args = append(args, Arg{Kind: ArgError}) // header's: the gathers' error word
	}
	return args
}

// CastConst converts a float attribute (a constant's or pad's value) to dtype d the way cast
// converts a float: every producer folds constants identically.
func CastConst(d ir.DType, f float64) float64 { return castConst(d, f) }

// ExactInt converts an integral float (a constant or an identity, where MaxInt64 travels as
// 2^63) to int64, saturating, as this generator's immediates are converted.
func ExactInt(f float64) int64 { return exactInt(f) }

// Reduction is the plan of a kernel's reduction template. Kind is "row", "split" (a full
// reduction over many blocks) or "column". Every reduce folds the same Axes of operands of
// shape Full, merged into [A, R, C] (kept before, reduced, kept after). Row: one block of
// Threads per row of R elements (A rows; Scattered when the axes are not adjacent, so a row's
// elements are found by coordinates rather than at row·R + r). Column: blocks of TileCols ×
// TileRows threads per tile of TileCols columns, each thread folding every TileRows-th row.
type Reduction struct {
	Kind               string
	Full               ir.Shape
	Axes               []int
	A, R, C            int
	Scattered          bool
	Threads            int
	TileCols, TileRows int
	Grid               [3]int
	ScratchBytes       int         // split: one 8-byte partial per block, then the ticket counter
	Reduces            []*ir.Value // in definition order
}

// IsRowShape reports whether s is a shape a reduction result may have (the kept dims, or Full
// with the reduced dims as 1): outputs of other shapes are full-shape ones.
func (p Reduction) IsRowShape(s ir.Shape) bool {
	var kept, keep1 ir.Shape
	for i, d := range p.Full {
		if slices.Contains(p.Axes, i) {
			keep1 = append(keep1, 1)
		} else {
			kept = append(kept, d)
			keep1 = append(keep1, d)
		}
	}
	return s.Equal(kept) || s.Equal(keep1)
}

// Accumulator is how reduce v folds: the dtype its partials are held in (f64 for float sums and
// products, rounded once at the end like the reference), the elementwise op combining two, and
// the identity it starts from.
func Accumulator(v *ir.Value) (acc ir.DType, combine string, identity float64) { return accumulator(v) }

// ViewAxis is where coordinate Operand of a view's operand comes from: Scale × coordinate Dim
// of the view, plus Offset (Dim -1: the constant Offset).
type ViewAxis struct{ Operand, Dim, Scale, Offset int }

// ViewPlan maps an element of view v (broadcast_in_dim, transpose, slice) to its operand's
// element, one entry per operand coordinate, in the order codegen/ptx derives them (register
// numbering follows it). A reshape maps by linear index and has no plan (nil).
func ViewPlan(v *ir.Value) []ViewAxis {
	op := v.Args[0]
	var plan []ViewAxis
	switch v.Op {
	case "broadcast_in_dim":
		for i, d := range v.Attrs.Ints("dims") {
			if op.Type.Shape[i] == 1 {
				d = -1
			}
			plan = append(plan, ViewAxis{Operand: i, Dim: d, Scale: 1})
		}
	case "transpose":
		for i, p := range v.Attrs.Ints("perm") {
			plan = append(plan, ViewAxis{Operand: p, Dim: i, Scale: 1})
		}
	case "slice":
		start, stride := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		for i := range op.Type.Shape {
			s := 1
			if stride != nil {
				s = stride[i]
			}
			plan = append(plan, ViewAxis{Operand: i, Dim: i, Scale: s, Offset: start[i]})
		}
	}
	return plan
}

// RowShapes are the kept and the reduced dims of the operand, each in axis order: a
// row is a linear position in kept, an element of it one in reduced (Scattered plans).
func (p Reduction) RowShapes() (kept, reduced ir.Shape) {
	for i, d := range p.Full {
		if slices.Contains(p.Axes, i) {
			reduced = append(reduced, d)
		} else {
			kept = append(kept, d)
		}
	}
	return kept, reduced
}

// RowCoords puts an element's coordinates together from its row's kept coordinates and its
// reduced ones (a Scattered plan's index arithmetic, whatever the coordinates are held in).
func RowCoords[T any](axes []int, kept, reduced []T) []T {
	coord := make([]T, 0, len(kept)+len(reduced))
	ki, ri := 0, 0
	for i := 0; i < len(kept)+len(reduced); i++ {
		if slices.Contains(axes, i) {
			coord = append(coord, reduced[ri])
			ri++
		} else {
			coord = append(coord, kept[ki])
			ki++
		}
	}
	return coord
}

// TransposeTile is the transpose-tile template's plan for a loop kernel: View (a transpose of
// a buffer, read only at the output's index) is staged through TileDim × TileDim tiles of
// shared memory; output dim P maps to the buffer's last dim, Last is the output's last. Tiles
// run over the other dims (row-major), then along P, then along Last; a block of TileDim ×
// TileRows threads covers TileRows rows of a tile per pass.
type TransposeTile struct {
	View              *ir.Value
	P, Last           int
	TileDim, TileRows int
	Tiles             int
	Grid, Block       [3]int
}

// Contraction is the plan of a kernel of the "contraction" Template: Kind "ffma" or
// "tensor core" (the 128×128-tile templates), "gemv" (few rows: package gemv) or "direct" (one thread per result, Why says why
// the tiles do not take it), for the kernel's one dot_general or conv2d, Dot.
type Contraction struct {
	Kind, Why   string
	Dot         *ir.Value
	Grid, Block [3]int
}

// Staged is the staged template's plan for a loop kernel: Kind "pool" (Value, a pooling read at
// the output's linear index, has the input range of each tile's windows staged: Slots
// elements at most) or "concat"; TileOut outputs per tile, one per thread.
type Staged struct {
	Kind        string
	Value       *ir.Value
	Slots       int
	TileOut     int
	Grid, Block [3]int
	// concat: its axis, and the elements per step along it (the product of the dims after it)
	Axis, Inner int
}

// ConvGeometry is a conv2d's stride, padding and dilation (per spatial dim) and groups, with
// the op table's defaults.
func ConvGeometry(v *ir.Value) (stride, pad, dil [2]int, groups int) {
	two := func(name string, def int) [2]int {
		if s := v.Attrs.Ints(name); s != nil {
			return [2]int{s[0], s[1]}
		}
		return [2]int{def, def}
	}
	return two("stride", 1), two("padding", 0), two("dilation", 1), v.Attrs.Int("groups", 1)
}

// Live returns the values g's outputs depend on, in definition order.
func Live(g *ir.Graph) []*ir.Value { return live(g) }

// ContractionKinds counts the kernel's live reductions, matmuls and convolutions, which choose
// its template; kinds lists the ones present, sorted.
func ContractionKinds(g *ir.Graph) (kinds []string, count map[string]int) {
	count = map[string]int{}
	for _, v := range live(g) {
		switch {
		case v.Op == "dot_general":
			count["matmul"]++
		case ops.ClassOf(v.Op) == ops.Reduce:
			count["reduce"]++
		case v.Op == "conv2d":
			count["conv2d"]++
		}
	}
	for _, kind := range []string{"conv2d", "matmul", "reduce"} {
		if count[kind] > 0 {
			kinds = append(kinds, kind)
		}
	}
	return kinds, count
}

// AccType is the accumulator dtype of a direct or persistent contraction's products: f64 for
// floats, i64 for integers, and with fmaF32 f32 for f32 operands into f32 (fma.rn.f32).
func AccType(dot *ir.Value, fmaF32 bool) ir.DType { return accType(dot, fmaF32) }

// accType is the accumulator type of dot's products: f64 for floats (exact products of f32,
// f16 and bf16), i64 for integers, and with fmaF32 f32 for f32 operands into f32.
func accType(dot *ir.Value, fmaF32 bool) ir.DType {
	switch {
	case !dot.Type.DType.IsFloat():
		return ir.I64
	case fmaF32 && dot.Type.DType == ir.F32 && dot.Args[0].Type.DType == ir.F32 && dot.Args[1].Type.DType == ir.F32:
		return ir.F32
	}
	return ir.F64
}

// castConst converts a float attribute to dtype d the way cast converts a float.
func castConst(d ir.DType, f float64) float64 {
	switch {
	case d.IsFloat():
		return tensor.RoundFloat(d, f)
	case d == ir.Bool:
		if f != 0 {
			return 1
		}
		return 0
	case f != f:
		return 0
	}
	lo, hi := IntLimits(d)
	return math.Max(lo, math.Min(hi, math.Trunc(f)))
}

// NearestRepeat recognizes a nearest upsampling along the last axis: v is a reshape merging the
// last two axes of a broadcast_in_dim that repeats each element of src r ≥ 2 times along a new
// last axis (v[..., w·r + k] = src[..., w]). src is nil where v is not one.
func NearestRepeat(v *ir.Value) (src *ir.Value, r int) {
	if v.Op != "reshape" || v.Args[0].Op != "broadcast_in_dim" {
		return nil, 0
	}
	bc := v.Args[0]
	src = bc.Args[0]
	rs, bs, os := v.Type.Shape, bc.Type.Shape, src.Type.Shape
	k := len(bs)
	if len(rs) == 0 || k != len(rs)+1 || len(os) != k-1 || !slices.Equal(bc.Attrs.Ints("dims"), iotaInts(k-1)) ||
		!slices.Equal(bs[:k-1], os) || !slices.Equal(rs[:k-2], bs[:k-2]) || bs[k-2]*bs[k-1] != rs[k-2] || bs[k-1] < 2 {
		return nil, 0
	}
	return src, bs[k-1]
}

// iotaInts is [0, 1, …, n-1].
func iotaInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// DirectFallback is the direct template's plan for a kernel ContractionPlan gives to the GEMV
// template, for a producer without a GEMV counterpart (codegen/nvvm): one thread per result
// element, grid-stride.
func DirectFallback(c Contraction) Contraction {
	n := c.Dot.Type.Shape.NumElements()
	return Contraction{Kind: "direct", Why: "no GEMV counterpart", Dot: c.Dot,
		Grid: [3]int{max(1, min(ceilDiv(n, LoopBlock), MaxLoopBlocks)), 1, 1}, Block: [3]int{LoopBlock, 1, 1}}
}

const LoopBlock = 256 // threads per block of loop kernels

// MaxLoopBlocks caps the grid of grid-stride kernels: enough blocks to fill the largest GPU
// several times over, few enough that each thread does several elements of a large tensor.
const MaxLoopBlocks = 4096

// VectorWidth chooses how many consecutive elements a thread handles, and whether the kernel is
// flat (only same-shape elementwise work, so groups may straddle rows).
func VectorWidth(g *ir.Graph, shape ir.Shape) (int, bool) {
	flat := true
	widest := 1
	for _, v := range live(g) {
		if v.Op == ir.OpInput || v.Op == ir.OpParam {
			if v.Type.Shape.Equal(shape) {
				widest = max(widest, v.Type.DType.Size())
			}
			continue
		}
		if !v.Type.Shape.Equal(shape) || (ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select" &&
			!(v.Op == "constant" && len(v.Attrs.Floats("value")) == 1)) {
			flat = false
		}
	}
	for _, o := range g.Outputs {
		widest = max(widest, o.Value.Type.DType.Size())
	}
	v := min(4, 16/widest)
	if widest == 2 {
		v = 8 // 16-bit types: eight per group, moved as four packed 32-bit words
	}
	n := shape.NumElements()
	switch {
	case n < v:
		return 1, true
	case flat:
		return v, true
	case shape.Rank() > 0:
		// Groups must not straddle rows: the widest power of two dividing the row.
		for ; v > 1; v /= 2 {
			if shape[shape.Rank()-1]%v == 0 {
				return v, false
			}
		}
	}
	return 1, true
}

// accumulator describes how one reduce folds: the dtype its partials are held in and the
// binary op that combines them.
func accumulator(v *ir.Value) (acc ir.DType, combine string, identity float64) {
	d := v.Type.DType
	switch v.Op {
	case "reduce_sum":
		combine, identity = "add", 0
	case "reduce_prod":
		combine, identity = "mul", 1
	case "reduce_max":
		combine, identity = "max", math.Inf(-1)
	case "reduce_min":
		combine, identity = "min", math.Inf(1)
	}
	switch {
	case d.IsFloat() && (combine == "add" || combine == "mul"):
		acc = ir.F64
	case d.IsFloat():
		acc = d
	case d == ir.I64:
		acc = ir.I64
	default:
		acc = ir.I32 // i8 and u8 wrap at the end, which modular arithmetic allows
	}
	if !acc.IsFloat() {
		lo, hi := IntLimits(d)
		switch combine {
		case "max":
			identity = lo
		case "min":
			identity = hi
		}
	}
	return acc, combine, identity
}

func IntLimits(d ir.DType) (lo, hi float64) {
	switch d {
	case ir.I8:
		return -128, 127
	case ir.U8:
		return 0, 255
	case ir.I32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// exactInt converts an integral float to int64, saturating: float64 cannot hold MaxInt64, so
// the i64 maximum travels as 2^63, and Go's int64(2^63) is implementation-defined (MinInt64 on
// amd64), which made reduce_min over i64 start from the minimum.
func exactInt(f float64) int64 {
	switch {
	case f >= 1<<63:
		return math.MaxInt64
	case f <= -(1 << 63):
		return math.MinInt64
	}
	return int64(f)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
