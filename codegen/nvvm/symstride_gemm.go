package nvvm

import (
	"slices"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// GEMMs over views at symbolic sizes, as codegen/ptx's symview.go: a product's left operand read
// through views that move the symbolic dims (the heads of attention merged back through a
// transpose, [2, 2, seq, 8] read as [2, seq, 16]) is generic (plan.GEMM's A.View; codegen/ptx's
// GEMMPlan makes it so for a kernel with sizes), and each copy delinearizes its free and k
// coordinates over the view's sizes at the run and follows the views down to the buffer, each
// size and stride computed from the dims' parameters. M is the size parameter, as for any
// symbolic GEMM (symgemm.go).

// gemmView binds a symbolic GEMM's dims and checks its left operand's views (a fold's, either
// operand's: symfold_view.go): nil for a kernel without sizes or operands read in place.
func (kg *kgen) gemmView(k plan.Kernel, args []plan.Arg, p plan.GEMM) (*symView, error) {
	views := []*irg.Value{p.A.View}
	if foldsK(k, p) {
		views = append(views, p.B.View)
	}
	sv := kg.newSymView(k, args)
	if sv == nil || !slices.ContainsFunc(views, func(v *irg.Value) bool { return v != nil }) {
		return nil, nil
	}
	for _, v := range views {
		if v == nil {
			continue
		}
		if err := sv.check(v); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// symCopier is genericCopier for the left operand of a symbolic GEMM with sizes, or either
// operand of one whose K is the rows or is symbolic (a batched product's: symcontract.go, its
// batch coordinates the bound's): copy i lies inside when its free coordinate is below M at
// the run (a fold's: the bound's) and its k below K (a fold's: at the run); outside, it reads
// the view's first element (which a run of at least one row wrote; a fold reads nothing) and
// copies 0.
func (mm *gemm) symCopier(sd *side) {
	kg := mm.kg
	d := sd.op.View.Type.DType
	sd.valueAt = func(k0 value.Value, i int) (value.Value, error) {
		ok, buf, lin := mm.symAt(sd, k0, i)
		if mm.symK != nil || mm.con != nil {
			return kg.loadIf(ok, d, sd.d, kg.ptr[buf], lin), nil // symfold_view.go, symcontract.go
		}
		return kg.b.NewSelect(ok, kg.load(d, kg.ptr[buf], lin), constVal(sd.d, 0)), nil
	}
}

// symCopies reports whether operand op of a symbolic GEMM with sizes is copied through its
// views at the run's sizes (symCopier).
func (mm *gemm) symCopies(op plan.GEMMOperand) bool {
	return op.View != nil && mm.symv != nil && (op.View == mm.p.A.View || mm.symK != nil || mm.con != nil)
}

// symAt is whether side sd's copy i at k step k0 lies inside, and its element through the
// views: buffer and linear index (the view's first element outside).
func (mm *gemm) symAt(sd *side, k0 value.Value, i int) (ok value.Value, buf *irg.Value, lin value.Value) {
	kg, op, sv := mm.kg, sd.op, mm.symv
	s := plan.SymSizes(op.View, sv.sizes)
	fn, kn := mm.freeBelow(sd, 0), value.Value(ci(mm.p.K)) // M at the run on the left
	if mm.symK != nil {
		kn = mm.symK
	}
	f := kg.add(sd.f0, ci(sd.df[i]))
	kk := kg.add(kg.add(k0, sd.kq), ci(sd.dk[i]))
	ok = kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, f, fn), kg.b.NewICmp(enum.IPredSLT, kk, kn))
	f, kk = kg.b.NewSelect(ok, f, ci(0)), kg.b.NewSelect(ok, kk, ci(0))
	c := make([]value.Value, len(s))
	for j, dd := range op.BatchDims { // a batched product's (symcontract.go): the bound's batch
		c[dd] = kg.coord(mm.bidx, j)
	}
	for _, grp := range []struct {
		dims []int
		lin  value.Value
	}{{op.FreeDims, f}, {op.ContractDims, kk}} {
		sizes := make([]sym.Expr, len(grp.dims))
		for j, dd := range grp.dims {
			sizes[j] = s[dd]
		}
		x := sv.delinearize(sizes, grp.lin)
		for j, dd := range grp.dims {
			c[dd] = x[j]
		}
	}
	buf, lin = sv.lin(op.View, c)
	return ok, buf, lin
}
