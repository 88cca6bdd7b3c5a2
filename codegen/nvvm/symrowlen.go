package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Row reductions of a symbolic last dim, as codegen/ptx's symrowlen.go (compiler/symrowlen.go:
// the softmax over the keys of unfused attention's scores [batch, h, t, seq], its backward's row
// sums). Laid out contiguously at the run's sizes, row r holds the elements r·n .. r·n+n−1, n
// the row length at the run. The kernel takes the dims of the reduced operand's sizes (k.Sizes)
// and then the row count (its size); every thread loops to n at the run, reads and writes the
// full tensors at r·n plus its position, and stores per-row results at r. The block is the
// bound's (rowThreads of the bound's length) and the partials combine in codegen/ptx's order.

// symRowLen returns the expression of the row length when symbolic kernel k reduces a symbolic
// last dim (its reductions' operand has sizes in k.Sizes); false for another kernel.
func symRowLen(k plan.Kernel, reds []*irg.Value) (sym.Expr, bool) {
	if !k.Symbolic || k.Sizes == nil || len(reds) == 0 {
		return sym.Expr{}, false
	}
	s := k.Sizes[reds[0].Args[0]]
	if len(s) == 0 {
		return sym.Expr{}, false
	}
	if _, ok := s[len(s)-1].IsConst(); ok {
		return sym.Expr{}, false
	}
	return s[len(s)-1], true
}

// rowLenArgs returns the parameters and work of a row reduction of a symbolic row length: the
// dims' parameters, then the row count (codegen/ptx's order), with ok; nothing for another.
func rowLenArgs(k plan.Kernel, rp plan.Reduction) (args []plan.Arg, w *plan.SymWork, ok bool, err error) {
	if _, ok := symRowLen(k, rp.Reduces); !ok || rp.Scattered {
		return nil, nil, false, nil
	}
	args, scale, err := symStrideArgs(k, rp.A, "row count")
	return args, symWork(scale, 1, 0, rp.Grid[0]), true, err
}

// rowLenAt is the row length at the run's sizes of a row reduction of a symbolic last dim
// (parameters args: rowLenArgs), nil for another kernel.
func (kg *kgen) rowLenAt(k plan.Kernel, rp plan.Reduction, args []plan.Arg) (value.Value, error) {
	n, ok := symRowLen(k, rp.Reduces)
	if !ok || rp.Scattered {
		return nil, nil
	}
	sv := kg.newSymView(k, args)
	if err := sv.valid(n); err != nil {
		return nil, err
	}
	return sv.eval(n), nil
}

// rowAtRun is rowElement for a row of length n at the run: row·n + r. It binds the broadcasts
// back along the row of values of the kept sizes to those values at the row (kg.at): their index
// arithmetic at the bound's sizes would not find it.
func (kg *kgen) rowAtRun(rp plan.Reduction, row, n value.Value, errp *error) func(r value.Value) *index {
	rowLin := kg.b.NewMul(row, n)
	kg.at = map[*irg.Value]func(*index) value.Value{}
	for _, v := range kg.g.Values {
		if v.Op == "broadcast_in_dim" && v.Type.Shape.Equal(rp.Full) && v.Args[0].Type.Shape.NumElements() == rp.A {
			kg.atRow(v, func(*index) value.Value { return row }, errp)
		}
	}
	return func(r value.Value) *index { return newIndexLin(rp.Full, kg.add(rowLin, r)) }
}

// atRow binds broadcast v to its operand at linear index row(x); the first error evaluating it
// is kept in *errp.
func (kg *kgen) atRow(v *irg.Value, row func(*index) value.Value, errp *error) {
	src := v.Args[0]
	kg.at[v] = func(x *index) value.Value {
		r, err := kg.eval(src, newIndexLin(src.Type.Shape, row(x)))
		if err != nil && *errp == nil {
			*errp = err
		}
		return r
	}
}

// A loop kernel over a full tensor whose last dim is symbolic, reading per-row values broadcast
// back along it (the softmax's division by its row sums, the weights' dropout after), as
// codegen/ptx's: k.Sizes holds the full sizes of each such broadcast of a buffer of the kept
// sizes. Every other value is elementwise at the element's linear index i at the run; a
// broadcast reads its buffer at row i / n, n the row length at the run. One element per thread
// of a grid-stride loop over the run's element count (its size, after the dims').

// symRowBroadcastKernel compiles a plan.RowBroadcastLoop kernel.
func (md *module) symRowBroadcastKernel(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	for _, o := range g.Outputs[1:] {
		if !o.Value.Type.Shape.Equal(shape) {
			return nil, plan.Launch{}, fmt.Errorf("outputs %s and %s have different shapes", g.Outputs[0].Name, o.Name)
		}
	}
	args, scale, err := symStrideArgs(k, shape.NumElements(), "element count")
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	sv := kg.newSymView(k, args)
	kg.at = map[*irg.Value]func(*index) value.Value{}
	var atErr error
	for _, v := range g.Values { // in the graph's order: deterministic
		s, ok := k.Sizes[v]
		if !ok || !plan.RowBroadcastOf(v, k.Sizes) {
			continue
		}
		n := s[len(s)-1]
		if err := sv.valid(n); err != nil {
			return nil, plan.Launch{}, err
		}
		rowLen := sv.eval(n)
		kg.atRow(v, func(x *index) value.Value { return kg.b.NewUDiv(kg.lin(x), rowLen) }, &atErr)
	}
	if err := kg.bindReduceViews(k, args); err != nil { // the views' tops it reads, if any (symfold_reduce_view.go)
		return nil, plan.Launch{}, err
	}
	tid := kg.b.NewAdd(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	err = kg.symLoopElements(shape, tid, step, 1, true) // sympersist.go
	kg.b.NewRet(nil)
	kg.at = nil
	if err == nil {
		err = atErr
	}
	if err != nil {
		return nil, plan.Launch{}, err
	}
	w := plan.SymWork{Vector: 1, Block: plan.LoopBlock, MaxBlocks: plan.MaxLoopBlocks, Scale: scale}
	l := plan.Launch{Grid: [3]int{w.Grid(int64(shape.NumElements())), 1, 1}, Block: [3]int{plan.LoopBlock, 1, 1}, Params: args, Work: &w}
	return kg.f, l, nil
}
