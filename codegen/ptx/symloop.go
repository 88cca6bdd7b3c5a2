package ptx

import (
	"fmt"
	"github.com/gcomp/gcomp/codegen/plan"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// symSize declares a symbolic kernel's size parameter (after the buffers), loads it, and returns
// the register and the Scale relating it to the kernel's rows: units is the size at the bound,
// which must be a whole number of rows (Kernel.Rows; 0: every unit is a row).
func symSize(k Kernel, b *builder, args *[]Arg, units int, what string) (string, int, error) {
	rows := k.Rows
	if rows == 0 {
		rows = units
	}
	if rows <= 0 || units%rows != 0 {
		return "", 0, fmt.Errorf("%s %d at the bound is not a whole number of its %d rows", what, units, rows)
	}
	p := b.param("u32", fmt.Sprintf("%s_param_%d", k.Name, len(*args)))
	*args = append(*args, Arg{Kind: ArgSize})
	n := b.reg(rU32)
	b.ins("ld.param.u32", n, "["+p+"]")
	b.note("%s n: parameter %d, %d per row of the kernel's symbolic rows", what, len(*args)-1, units/rows)
	return n, units / rows, nil
}

// SymbolicLoop reports why g cannot be a symbolic loop kernel, or "" when it can: every value
// the outputs need is elementwise (select and casts included) or a scalar constant over the one
// space, and every input has that space's shape. Such a kernel indexes every tensor by the
// element's linear index alone, so its code depends on the element count only and a tensor
// contiguous at the run's sizes is read and written correctly. Broadcasts and views map
// indices through the shape, which would need the sizes in the index arithmetic: not yet.
func SymbolicLoop(g *ir.Graph) string {
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs {
		if !o.Value.Type.Shape.Equal(shape) {
			return fmt.Sprintf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	for _, v := range live(g) {
		switch {
		case v.Op == ir.OpInput || v.Op == ir.OpParam:
			if !v.Type.Shape.Equal(shape) {
				return fmt.Sprintf("%s %s is read through a broadcast or view", v.Op, v.Name)
			}
		case v.Op == "constant" && len(v.Attrs.Floats("value")) == 1:
		case !v.Type.Shape.Equal(shape) || ops.ClassOf(v.Op) != ops.Elementwise && v.Op != "select":
			return fmt.Sprintf("it computes %s, which maps indices through the sizes", v.Op)
		}
	}
	return ""
}

// symLoopKernel is loopKernel for a kernel whose element count n is known only at launch: the
// count is the .u32 parameter after the buffers, groups of V elements run while a whole group
// fits (n/V of them) and the scalar tail from V·(n/V) to n. The grid is computed at launch from
// n (SymWork); the Launch's Grid is the one at the bound. A flat elementwise kernel indexes
// every tensor by the linear index alone; a row kernel (Kernel.Rows) may also read static
// operands broadcast along its rows and views that keep them, whose index arithmetic at the
// bound is that at the run's sizes for the first n elements (compiler's symrows.go); its groups
// stay within rows, so no tail.
func symLoopKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if why := SymbolicLoop(g); why != "" && k.Rows == 0 {
		return "", Launch{}, fmt.Errorf("a loop kernel over symbolic sizes must be elementwise only; %s: not compiled yet", why)
	}
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	if k.Sizes != nil {
		g = gn.layerKernel(k, &args) // layers of stacked buffers at the run's offsets: symlayer.go
	}
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return "", Launch{}, fmt.Errorf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	n, scale, err := symSize(k, b, &args, shape.NumElements(), "element count")
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	v, flat := vectorWidth(g, shape)
	b.note("groups of %d while they fit, then a scalar tail", v)
	end := n
	if v > 1 {
		groups := b.reg(rU32)
		b.ins("div.u32", groups, n, imm(v))
		gn.loopTo(tid, nthreads, groups, func(i string) error {
			return gn.elementGroup(shape, gn.a.mul(i, v), v, flat)
		})
		start := b.reg(rU32)
		b.ins("mad.lo.s32", start, groups, imm(v), tid)
		tid = start
	}
	gn.loopTo(tid, nthreads, end, func(i string) error {
		return gn.elementGroup(shape, i, 1, true)
	})
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	w := SymWork{Vector: v, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}
	l := Launch{Grid: [3]int{w.Grid(int64(shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}

// symbolicKernel picks the template of a symbolic kernel: the loop, or a row template that takes
// its row count as a parameter. Other templates do not run at symbolic sizes yet.
func symbolicKernel(k Kernel, t Target, globals *[]string) (string, Launch, error) {
	if op, ok := BackwardAttention(k.Graph); ok {
		return attentionBwdKernel(k, op) // symattn.go
	}
	if _, ok := PlanAttention(k.Graph); ok {
		return attentionKernel(k, t) // symattn.go
	}
	if v, ok := UpdateOp(k.Graph); ok {
		return updateKernel(k, v, globals) // symupdate.go
	}
	kinds, count := contractionKinds(k.Graph)
	switch {
	case len(kinds) == 0 && plan.RowBroadcastLoop(k):
		return symRowBroadcastKernel(k, globals) // symrowlen.go
	case len(kinds) == 0 && k.Sizes != nil && !layerSized(k) && SymbolicConcat(k.Graph) == "":
		return symConcatKernel(k, globals) // symconcat.go
	case len(kinds) == 0 && k.Sizes != nil && !layerSized(k):
		return symCopyKernel(k, globals) // symcopy.go
	case len(kinds) == 0:
		return symLoopKernel(k, globals)
	case len(kinds) == 1 && kinds[0] == "reduce" && k.Rows > 0:
		return reduceKernel(k, globals)
	case len(kinds) == 1 && (kinds[0] == "matmul" || kinds[0] == "conv2d") && count[kinds[0]] == 1 && k.Rows > 0:
		return matmulKernel(k, t, globals)
	case NormPrologue(k.Graph) && k.Rows > 0:
		return matmulKernel(k, t, globals) // a GEMV with a norm prologue (symgemvnorm.go)
	}
	return "", Launch{}, fmt.Errorf("a %s kernel does not run at symbolic sizes yet", strings.Join(kinds, " and "))
}

// symRows is a row template's hook: for a static kernel, the immediate units (its rows, or its
// M) and no work; for a symbolic one, the register of its size parameter and the SymWork that
// sets grid axis axis from the size in tiles of tile units, at most maxBlocks (the bound's).
func symRows(k Kernel, b *builder, args *[]Arg, units, tile, axis, maxBlocks int) (string, *SymWork, error) {
	if !k.Symbolic {
		return imm(units), nil, nil
	}
	n, scale, err := symSize(k, b, args, units, "row count")
	if err != nil {
		return "", nil, err
	}
	return n, &SymWork{Vector: 1, MaxBlocks: maxBlocks, Scale: scale, Tile: tile, Axis: axis}, nil
}
