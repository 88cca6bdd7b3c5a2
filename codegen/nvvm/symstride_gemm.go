package nvvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir/sym"
)

// GEMMs over views at symbolic sizes, as codegen/ptx's symview.go: a product's left operand read
// through views that move the symbolic dims (the heads of attention merged back through a
// transpose, [2, 2, seq, 8] read as [2, seq, 16]) is generic (plan.GEMM's A.View; codegen/ptx's
// GEMMPlan makes it so for a kernel with sizes), and each copy delinearizes its free and k
// coordinates over the view's sizes at the run and follows the views down to the buffer, each
// size and stride computed from the dims' parameters. M is the size parameter, as for any
// symbolic GEMM (symgemm.go).

// gemmView binds a symbolic GEMM's dims and checks its left operand's views: nil for a kernel
// without sizes or a left operand read in place.
func (kg *kgen) gemmView(k plan.Kernel, args []plan.Arg, p plan.GEMM) (*symView, error) {
	sv := kg.newSymView(k, args)
	if sv == nil || p.A.View == nil {
		return nil, nil
	}
	return sv, sv.check(p.A.View)
}

// symCopier is genericCopier for the left operand of a symbolic GEMM with sizes: copy i lies
// inside when its row is below M at the run and its k below K; outside, it reads the view's
// first element (which a run of at least one row wrote) and copies 0.
func (mm *gemm) symCopier(sd *side) {
	kg, op, sv := mm.kg, sd.op, mm.symv
	s := plan.SymSizes(op.View, sv.sizes)
	d := op.View.Type.DType
	sd.valueAt = func(k0 value.Value, i int) (value.Value, error) {
		f := kg.add(sd.f0, ci(sd.df[i]))
		kk := kg.add(kg.add(k0, sd.kq), ci(sd.dk[i]))
		ok := kg.b.NewAnd(kg.b.NewICmp(enum.IPredSLT, f, mm.symM), kg.b.NewICmp(enum.IPredSLT, kk, ci(mm.p.K)))
		f, kk = kg.b.NewSelect(ok, f, ci(0)), kg.b.NewSelect(ok, kk, ci(0))
		c := make([]value.Value, len(s))
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
		buf, lin := sv.lin(op.View, c)
		return kg.b.NewSelect(ok, kg.load(d, kg.ptr[buf], lin), constVal(sd.d, 0)), nil
	}
}
