package ptx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The plans this package still makes by writing a kernel, or from its emitter's own layouts;
// codegen/plan asks them through what init registers (codegen/plan's emitter.go).

// GEMMPlan returns the tiled plan of a kernel whose ContractionPlan kind is "ffma" or
// "tensor core".
func GEMMPlan(k Kernel, t Target) (GEMM, error) {
	c, err := ContractionPlan(k, t)
	if err != nil {
		return GEMM{}, err
	}
	if c.Kind == "direct" {
		return GEMM{}, fmt.Errorf("the contraction runs in the direct template (%s)", c.Why)
	}
	var mm *matmul
	if c.Dot.Op == "conv2d" {
		if mm, err = convGEMM(c.Dot); err == nil {
			mm.conv.pool, mm.conv.win, err = convPool(k.Graph, c.Dot)
		}
	} else {
		if mm, _, err = dotGEMM(c.Dot); err == nil && !slices.Contains(c.Dot.Attrs.Ints("lhs_contract"), 0) {
			err = mm.symViewLHS(k) // symgemm.go: as the template reads it
		} else if err == nil {
			err = mm.symFoldGeneric(k) // symfold_view.go: as the template reads it
		}
	}
	if err != nil {
		return GEMM{}, err
	}
	p := GEMM{Dot: c.Dot, M: mm.M, N: mm.N, K: mm.K, Batch: mm.batchShape, A: exportOperand(mm.lhs), B: exportOperand(mm.rhs),
		RowCol: mm.conv == nil && mm.rowColShape(), ColGroups: mm.conv == nil && mm.colGroups(4),
		ColPairs: mm.conv == nil && mm.colGroups(2) && len(mm.batchShape)+2 == c.Dot.Type.Shape.Rank(), Grid: c.Grid, Block: c.Block}
	p.ColRegs = mm.narrowColRegs()
	p.TileN = 16 * p.ColRegs
	mm.rn = p.ColRegs
	if c.Kind != "tensor core" {
		p.MinBlocksPerSM = mm.minBlocksPerSM()
	}
	if c.Kind == "tensor core" {
		ms := mm.mmaShape()
		sides, err := mm.mmaSides(ms)
		if err != nil {
			return GEMM{}, err
		}
		p.MMA = &MMA{EB: ms.eb, BK: ms.bk, KStep: ms.kStep, Inst: ms.inst, Staged: mm.mmaStaged()}
		p.MMA.WarpsN, p.MMA.MI, p.MMA.NI = mmaWarps(mm.rn)
		for i, sd := range sides {
			if sd.q != nil {
				p.MMA.Sides[i], p.MMA.Quant = sd.q.plan(sd.bufBytes) // mma_dequant.go
				continue
			}
			perRow, df, dk := sd.copies(ms.bk, []int{GEMMTileM, p.TileN}[i])
			p.MMA.Sides[i] = MMASide{KContig: sd.kContig, RowH: sd.rowH, BufBytes: sd.bufBytes, Chunk: sd.chunk, Elem: sd.elem,
				PerRow: perRow, DF: df, DK: dk}
		}
	}
	if cs := mm.conv; cs != nil {
		p.Conv = &ConvGEMM{Groups: cs.groups, N: cs.n, C: cs.c, H: cs.h, W: cs.w, O: cs.o, KH: cs.kh, KW: cs.kw, OH: cs.oh, OW: cs.ow,
			Stride: cs.stride, Pad: cs.pad, Dil: cs.d, Pool: cs.pool, Win: cs.win}
	}
	return p, nil
}

func exportOperand(l operandLayout) GEMMOperand {
	o := GEMMOperand{Buffer: l.v, View: l.view, BatchDims: l.batchDims, FreeDims: l.freeDims, ContractDims: l.contractDims,
		Off: l.off, BatchStrides: l.batchStrides, Free: l.free, FreeSt: l.freeSt, K: l.k, KSt: l.kSt}
	if l.view != nil {
		o.Buffer = nil
	}
	return o
}

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

// contractionKinds is plan.ContractionKinds.
func contractionKinds(g *ir.Graph) (kinds []string, count map[string]int) {
	return plan.ContractionKinds(g)
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
	p := Reduction{Full: rs.full, Axes: rs.axes, A: rs.a, R: rs.r, C: rs.c, Scattered: rs.scattered, Reduces: reds}
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

func init() {
	plan.Register(plan.Emitter{Template: Template, ReducePlan: ReducePlan, TransposePlan: TransposePlan, StagedPlan: StagedPlan,
		PoolGeometry: PoolGeometry, ContractionPlan: ContractionPlan, GEMMPlan: GEMMPlan, Generate: Generate})
}
