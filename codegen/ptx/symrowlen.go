package ptx

import (
	"fmt"
	"github.com/gcomp/gcomp/codegen/plan"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Row reductions of a symbolic last dim (compiler/symrowlen.go): the softmax over the keys of
// unfused attention's scores [batch, h, t, seq], its backward's row sums. Laid out contiguously
// at the run's sizes, row r holds the elements r·n .. r·n+n−1, n the row length at the run. The
// kernel takes the row count (its size parameter) and the dims of the reduced operand's sizes
// (k.Sizes); every thread loops to n at the run rather than the bound's row length, reads and
// writes the full tensors at r·n plus its position, and stores per-row results at r as always.
// The block is the bound's (rowBlock of the bound's length), so a run's sums combine in the
// static kernel's order whenever the static kernel at the run's sizes has the same block.

// symRowLen returns the expression of the row length when symbolic kernel k reduces a symbolic
// last dim (its reductions' operand has sizes in k.Sizes); false for another kernel.
func symRowLen(k Kernel, reds []*ir.Value) (sym.Expr, bool) {
	if !k.Symbolic || k.Sizes == nil || len(reds) == 0 {
		return sym.Expr{}, false
	}
	s := k.Sizes[reds[0].Args[0]]
	if len(s) == 0 || isConst(s[len(s)-1]) {
		return sym.Expr{}, false
	}
	return s[len(s)-1], true
}

// symRowExtent declares the row count and the dims of a row reduction of a symbolic last dim n,
// returning the row count's and n's registers at the run, and the views it reads at the run's
// sizes (symfold_reduce_view.go), if any.
func symRowExtent(k Kernel, rs reduceShape, n sym.Expr, b *builder, args *[]Arg) (rows, rEnd string, work *SymWork, sv *symView, err error) {
	dims := symViewLoad(k, b, args, k.Sizes) // before the row count: the work's size is the last
	rows, work, err = symRows(k, b, args, rs.a, 1, 0, max(1, min(rs.a, maxLoopBlocks)))
	if err != nil {
		return "", "", nil, nil, err
	}
	if rEnd, err = symEval(func() string { return b.reg(rU32) }, b.ins, dims, n); err != nil {
		return "", "", nil, nil, err
	}
	sv, err = rowLenViews(k, b, dims)
	return rows, rEnd, work, sv, err
}

// rowAtRun is rowElement for a row of length n at the run (a register): row·n + r. It binds
// the broadcasts back along the row of values of the kept sizes to those values at the row:
// their index arithmetic at the bound's sizes would not find it.
func rowAtRun(gn *gen, rs reduceShape, row, n string) func(r string) *index {
	a := gn.a
	rowLin := a.b.reg(rU32)
	a.b.ins("mul.lo.s32", rowLin, row, n)
	for _, v := range gn.kernelGraph.Values {
		if v.Op == "broadcast_in_dim" && v.Type.Shape.Equal(rs.full) && v.Args[0].Type.Shape.NumElements() == rs.a {
			src := v.Args[0]
			gn.bound[v] = func(*index) val {
				r, err := gn.eval(src, newIndexLin(src.Type.Shape, row))
				if err != nil && gn.err == nil {
					gn.err = err
				}
				return r
			}
		}
	}
	return func(r string) *index { return newIndexLin(rs.full, a.add(rowLin, r)) }
}

// A loop kernel over a full tensor whose last dim is symbolic, reading per-row values
// broadcast back along it (the softmax's division by its row sums, the weights' dropout
// after): k.Sizes holds the full sizes of each such broadcast of a buffer of the kept sizes
// (compiler/symrowlen.go). Every other value is elementwise at the element's linear index i at
// the run; a broadcast reads its buffer at row i / n, n the row length at the run. One element
// per thread of a grid-stride loop over the run's element count (its size parameter).

// Its operands of the full sizes may be the tops of chains of views of the kernel's buffers
// (the exponentials of scores transposed to move the keys last): k.Sizes holds the views' sizes
// too, and the loop reads each top at the run's linear index as the row-length template does
// (symfold_reduce_view.go).

// symRowBroadcastKernel compiles a plan.RowBroadcastLoop kernel.
func symRowBroadcastKernel(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return "", Launch{}, fmt.Errorf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	dims := symViewLoad(k, b, &args, k.Sizes) // before the element count: the work's size is the last
	n, scale, err := symSize(k, b, &args, shape.NumElements(), "element count")
	if err != nil {
		return "", Launch{}, err
	}
	sv, err := rowLenViews(k, b, dims) // symfold_reduce_view.go
	if err != nil {
		return "", Launch{}, err
	}
	bindViewTops(gn, sv, g)
	for _, v := range g.Values { // in the graph's order: deterministic; rebinds the row broadcasts the views bound
		s, ok := k.Sizes[v]
		if !ok || !plan.RowBroadcastOf(v, k.Sizes) {
			continue
		}
		rowLen, err := symEval(func() string { return b.reg(rU32) }, b.ins, dims, s[len(s)-1])
		if err != nil {
			return "", Launch{}, err
		}
		src := v.Args[0]
		gn.bound[v] = func(x *index) val {
			row := b.reg(rU32)
			b.ins("div.u32", row, gn.a.reg(x.getLin(gn.a)), rowLen)
			r, err := gn.eval(src, newIndexLin(src.Type.Shape, row))
			if err != nil && gn.err == nil {
				gn.err = err
			}
			return r
		}
	}
	tid, nthreads := globalThread(b)
	gn.loopTo(tid, nthreads, n, func(i string) error {
		return gn.elementGroup(shape, i, 1, true)
	})
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	w := SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}
	l := Launch{Grid: [3]int{w.Grid(int64(shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}
