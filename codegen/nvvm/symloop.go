package nvvm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Kernels at symbolic sizes (plan.Kernel.Symbolic; docs/dynamic.md): codegen/ptx's symloop.go
// and symgemm.go, template for template. The kernel's graph holds its space at the bound; its
// size at the run's sizes (an element count, its rows, or a GEMM's M, Kernel.Rows times the
// template's unit per row) is an i32 parameter after the buffers (kgen.size, `.param .u32` in
// the PTX), which bounds the loops, the grid-stride rows and the edge checks where the bound's
// code has an immediate. Parameters, launches and work are codegen/ptx's, so one plan runs
// either module.

// symbolicKernel picks the template of a symbolic kernel as codegen/ptx's symbolicKernel does:
// attention and its backward, a concat or copy through views, the loop, or a row template that takes its row count as a
// parameter.
func (md *module) symbolicKernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	if _, ok := plan.BackwardAttention(k.Graph); ok {
		return md.attentionBwdKernel(k, t) // symattn_bwd.go
	}
	if _, ok := plan.PlanAttention(k.Graph); ok {
		return md.attentionKernel(k, t) // symattn.go
	}
	if _, ok := plan.UpdateOp(k.Graph); ok {
		return md.updateKernel(k) // symupdate.go
	}
	if plan.Template(k) == "norm gemv" && k.Rows > 0 {
		return md.normGEMVKernel(k) // symgemvnorm.go
	}
	kinds, count := plan.ContractionKinds(k.Graph)
	switch {
	case len(kinds) == 0 && plan.RowBroadcastLoop(k):
		return md.symRowBroadcastKernel(k) // symrowlen.go
	case len(kinds) == 0 && k.Sizes != nil && !plan.LayerSized(k) && plan.ConcatCopy(k.Graph):
		return md.symConcatKernel(k) // symconcat.go
	case len(kinds) == 0 && k.Sizes != nil && !plan.LayerSized(k) && plan.SymbolicConcat(k.Graph) == "":
		return md.symConcatFused(k) // symconcat_fused.go
	case len(kinds) == 0 && k.Sizes != nil && !plan.LayerSized(k):
		return md.symCopyKernel(k) // symstride_copy.go
	case len(kinds) == 0:
		return md.symLoopKernel(k)
	case len(kinds) == 1 && kinds[0] == "reduce" && k.Rows > 0:
		return md.symRowReduce(k)
	case len(kinds) == 1 && (kinds[0] == "matmul" || kinds[0] == "conv2d") && count[kinds[0]] == 1 && k.Rows > 0:
		return md.symContraction(k, t)
	}
	return nil, plan.Launch{}, fmt.Errorf("a %s kernel does not run at symbolic sizes yet", strings.Join(kinds, " and "))
}

// symArgs is a symbolic kernel's parameters: plan.Params, then the size. scale is the size's
// units per row of the kernel's rows: units, the size at the bound, must be a whole number of
// them (Kernel.Rows; 0: every unit is a row).
func symArgs(k plan.Kernel, units int, what string) ([]plan.Arg, int, error) {
	scale, err := symScale(k.Rows, units, what)
	if err != nil {
		return nil, 0, err
	}
	return append(plan.Params(k.Graph), plan.Arg{Kind: plan.ArgSize}), scale, nil
}

// symScale is the units per row of a size of units at the bound over rows (0: every unit is a
// row), which must divide it.
func symScale(rows, units int, what string) (int, error) {
	if rows == 0 {
		rows = units
	}
	if rows <= 0 || units%rows != 0 {
		return 0, fmt.Errorf("%s %d at the bound is not a whole number of its %d rows", what, units, rows)
	}
	return units / rows, nil
}

// symLoopKernel is the loop template at a size n known at launch: groups of V elements while a
// whole group fits (n/V of them), then the scalar tail from V·(n/V) to n, grid-stride. A flat
// elementwise kernel indexes every tensor by the linear index alone; a row kernel
// (Kernel.Rows) may read static operands broadcast along its rows and views that keep them,
// whose index arithmetic at the bound is that at the run's sizes for the first n elements; its
// groups stay within rows. It may read and write layers of stacked buffers at the run's offsets
// (symlayer.go), their parameters before the size.
func (md *module) symLoopKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	var offsets []plan.Arg
	if k.Sizes != nil {
		offsets, g = layerArgs(k)
	}
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return nil, plan.Launch{}, fmt.Errorf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	if why := flatElementwise(k.Graph); why != "" && k.Rows == 0 {
		return nil, plan.Launch{}, fmt.Errorf("a loop kernel over symbolic sizes must be elementwise only; %s: not compiled yet", why)
	}
	args, scale, err := symArgs(k, shape.NumElements(), "element count")
	if err != nil {
		return nil, plan.Launch{}, err
	}
	args = slices.Insert(args, len(args)-1, offsets...)
	kg := md.newKernel(k, args)
	if k.Sizes != nil {
		kg.layerKernel(k, args)
	}
	v, flat := plan.VectorWidth(kg.g, shape)
	tid := kg.b.NewAdd(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	err = kg.symLoopElements(shape, tid, step, v, flat) // sympersist.go
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	w := plan.SymWork{Vector: v, Block: plan.LoopBlock, MaxBlocks: plan.MaxLoopBlocks, Scale: scale}
	l := plan.Launch{Grid: [3]int{w.Grid(int64(shape.NumElements())), 1, 1}, Block: [3]int{plan.LoopBlock, 1, 1}, Params: args, Work: &w}
	return kg.f, l, nil
}

// symWork is a row template's work: its size in tiles of tile units along grid axis axis, at
// most maxBlocks (the bound's), as codegen/ptx's symRows.
func symWork(scale, tile, axis, maxBlocks int) *plan.SymWork {
	return &plan.SymWork{Vector: 1, MaxBlocks: maxBlocks, Scale: scale, Tile: tile, Axis: axis}
}

// flatElementwise reports why g is not flat elementwise (every live value elementwise, select or
// a scalar constant, every input and value of the output's shape: indexed by the linear index
// alone), or "" when it is, in codegen/ptx's SymbolicLoop words.
func flatElementwise(g *irg.Graph) string {
	shape := g.Outputs[0].Value.Type.Shape
	for _, v := range plan.Live(g) {
		same := v.Type.Shape.Equal(shape)
		switch {
		case (v.Op == irg.OpInput || v.Op == irg.OpParam) && !same:
			return fmt.Sprintf("%s %s is read through a broadcast or view", v.Op, v.Name)
		case v.Op == irg.OpInput || v.Op == irg.OpParam, v.Op == "constant" && len(v.Attrs.Floats("value")) == 1:
		case !same || ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select":
			return fmt.Sprintf("it computes %s, which maps indices through the sizes", v.Op)
		}
	}
	return ""
}

// units is n, a template's units at the bound, or a symbolic kernel's size parameter (but a
// folding conv's, whose elements are static).
func (kg *kgen) units(n int) value.Value {
	if kg.size != nil && kg.foldK == nil { // a folding conv's size is its taps (symconv.go)
		return kg.size
	}
	return ci(n)
}
