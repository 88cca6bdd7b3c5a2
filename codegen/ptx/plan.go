package ptx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The decisions another producer of the same kernels (codegen/nvvm) shares with this one, so
// that both give a kernel the same name, parameters and tiling.

// Template names the template Generate picks for a verified kernel: "persistent", "update", "attention",
// "norm gemv" (a GEMV with a norm prologue, gemvnorm.go), "loop", "transpose tile", "staged loop",
// "reduction", "contraction", or "" for a kernel no template
// takes (Generate says why).
func Template(k Kernel) string {
	g := k.Graph
	if len(k.Stages) > 0 {
		return "persistent"
	}
	if len(g.Outputs) == 0 {
		return ""
	}
	if _, ok := UpdateOp(g); ok {
		return "update"
	}
	if hasLSE(g) {
		return "attention backward"
	}
	if _, ok := PlanAttention(g); ok {
		return "attention"
	}
	if NormPrologue(g) {
		return "norm gemv"
	}
	kinds, count := contractionKinds(g)
	switch {
	case len(kinds) == 0:
		shape := g.Outputs[0].Value.Type.Shape
		if findTransposeTile(g, shape) != nil {
			return "transpose tile"
		}
		if findStage(g, shape) != nil {
			return "staged loop"
		}
		return "loop"
	case len(kinds) == 1 && kinds[0] == "reduce":
		return "reduction"
	case len(kinds) == 1 && count[kinds[0]] == 1:
		return "contraction"
	}
	return ""
}

// contractionKinds counts the kernel's live reductions, matmuls and convolutions, which choose
// its template; kinds lists the ones present, sorted.
func contractionKinds(g *ir.Graph) (kinds []string, count map[string]int) {
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

// LoopPlan is the loop template's tiling: each work item is a group of V consecutive output
// elements (flat: groups may straddle rows, as only same-shape elementwise work is fused), and
// the launch that covers the work items with grid-stride threads.
func LoopPlan(g *ir.Graph) (v int, flat bool, grid, block [3]int) {
	shape := g.Outputs[0].Value.Type.Shape
	v, flat = vectorWidth(g, shape)
	n := shape.NumElements()
	work := max(1, n/v, n%v)
	return v, flat, [3]int{min(ceilDiv(work, loopBlock), maxLoopBlocks), 1, 1}, [3]int{loopBlock, 1, 1}
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
	if len(gatherSites(g)) > 0 {
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
	shape              reduceShape
}

// ReducePlan plans a kernel of the "reduction" Template as codegen/ptx generates it.
func ReducePlan(k Kernel) (Reduction, error) {
	var reds []*ir.Value
	for _, v := range live(k.Graph) {
		if ops.ClassOf(v.Op) == ops.Reduce {
			reds = append(reds, v)
		}
	}
	if len(reds) == 0 {
		return Reduction{}, fmt.Errorf("%s: no reduction to plan (a %s kernel)", k.Name, Template(k))
	}
	rs, err := reduceLayout(reds)
	if err != nil {
		return Reduction{}, err
	}
	if err := checkRowDomains(k.Graph, rs); err != nil {
		return Reduction{}, err
	}
	p := Reduction{Full: rs.full, Axes: rs.axes, A: rs.a, R: rs.r, C: rs.c, Scattered: rs.scattered, Reduces: reds, shape: rs}
	switch {
	case rs.rowPattern && rs.a == 1 && rs.r >= splitReduce && len(reds) == 1 && !outputsFull(k.Graph, rs):
		p.Kind, p.Threads = "split", splitThreads
		p.Grid = [3]int{splitBlocks(rs.r), 1, 1}
		p.ScratchBytes = 8*p.Grid[0] + 8
	case rs.rowPattern:
		p.Kind, p.Threads = "row", rowBlock(rs.r)
		p.Grid = [3]int{max(1, min(rs.a, maxLoopBlocks)), 1, 1}
	default:
		p.Kind, p.Threads, p.TileCols, p.TileRows = "column", colWidth*colRows, colWidth, colRows
		p.Grid = [3]int{max(1, min(rs.a*ceilDiv(rs.c, colWidth), maxLoopBlocks)), 1, 1}
	}
	return p, nil
}

// A split reduction runs splitThreads per block, each folding at least 8 elements, in at most
// maxSplitBlocks blocks.
const splitThreads = 256

func splitBlocks(r int) int { return min(maxSplitBlocks, ceilDiv(r, splitThreads*8)) }

// IsRowShape reports whether s is a shape a reduction result may have (the kept dims, or Full
// with the reduced dims as 1): outputs of other shapes are full-shape ones.
func (p Reduction) IsRowShape(s ir.Shape) bool { return p.shape.isRowShape(s) }

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
	return reduceShape{full: p.Full, axes: p.Axes}.split()
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

// TransposePlan returns the plan of a kernel of the "transpose tile" Template.
func TransposePlan(k Kernel) TransposeTile {
	shape := k.Graph.Outputs[0].Value.Type.Shape
	tt := findTransposeTile(k.Graph, shape)
	tiles := ceilDiv(shape[tt.p], tileDim) * ceilDiv(shape[tt.last], tileDim)
	for i, n := range shape {
		if i != tt.p && i != tt.last {
			tiles *= n
		}
	}
	return TransposeTile{View: tt.view, P: tt.p, Last: tt.last, TileDim: tileDim, TileRows: tileRows, Tiles: tiles,
		Grid: [3]int{max(1, min(tiles, maxLoopBlocks)), 1, 1}, Block: [3]int{tileDim * tileRows, 1, 1}}
}

// Contraction is the plan of a kernel of the "contraction" Template: Kind "ffma" or
// "tensor core" (the 128×128-tile templates), "gemv" (few rows: package gemv) or "direct" (one thread per result, Why says why
// the tiles do not take it), for the kernel's one dot_general or conv2d, Dot.
type Contraction struct {
	Kind, Why   string
	Dot         *ir.Value
	Grid, Block [3]int
}

// ContractionPlan says which contraction template codegen/ptx generates k with for target t
// (it generates the kernel to find out).
func ContractionPlan(k Kernel, t Target) (Contraction, error) {
	var globals []string
	text, l, err := matmulKernel(k, t, &globals)
	if err != nil {
		return Contraction{}, err
	}
	c := Contraction{Kind: "ffma", Grid: l.Grid, Block: l.Block}
	for _, v := range live(k.Graph) {
		if v.Op == "dot_general" || v.Op == "conv2d" {
			c.Dot = v
		}
	}
	const direct = "// direct " // the direct template's note
	switch {
	case strings.Contains(text, direct):
		c.Kind = "direct"
		line := text[strings.Index(text, direct):]
		line = line[:strings.IndexByte(line, '\n')]
		if i, j := strings.Index(line, "("), strings.LastIndex(line, ")"); i >= 0 && j > i {
			c.Why = line[i+1 : j]
		}
	case strings.Contains(text, "// gemv: "):
		c.Kind = "gemv"
	case strings.Contains(text, "mma.sync"):
		c.Kind = "tensor core"
	}
	return c, nil
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

// StagedPlan returns the plan of a kernel of the "staged loop" Template.
func StagedPlan(k Kernel) Staged {
	shape := k.Graph.Outputs[0].Value.Type.Shape
	tiles := ceilDiv(shape.NumElements(), tileOut)
	s := Staged{TileOut: tileOut, Grid: [3]int{min(tiles, maxLoopBlocks), 1, 1}, Block: [3]int{tileOut, 1, 1}}
	switch st := findStage(k.Graph, shape).(type) {
	case *poolTile:
		s.Kind, s.Value, s.Slots = "pool", st.pool, st.span
	case *concatTile:
		s.Kind, s.Value, s.Slots, s.Axis, s.Inner = "concat", st.cat, st.elems(), st.axis, st.inner
	}
	return s
}

// PoolGeometry is a pooling's kernel, stride and padding with the op table's defaults (stride
// = kernel, no padding).
func PoolGeometry(v *ir.Value) (kern, stride, pad []int) {
	w := windowOf(v)
	return w.kern, w.stride, w.pad
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

// AccType is the accumulator dtype of a direct or persistent contraction's products: f64 for
// floats, i64 for integers, and with fmaF32 f32 for f32 operands into f32 (fma.rn.f32).
func AccType(dot *ir.Value, fmaF32 bool) ir.DType { return accType(dot, fmaF32) }
