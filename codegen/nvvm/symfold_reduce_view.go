package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// Reductions read through views, as codegen/ptx's symfold_reduce_view.go: a bias gradient over
// the rows whose operand merges attention's heads back ([batch, h, seq, d] transposed and
// reshaped into [batch, seq, h·d]) reads buffers whose rows are not the kernel's, and so does a
// layer norm or a softmax over the merged rows. Every reduction template (the column one, the
// row one with its scattered folds, the split one) takes the dims the views' sizes
// (Kernel.Sizes) name as parameters before its size (viewDims), and reads each top of a chain of
// views at its linear index, which is the same at the bound and at the run (its rows lead, its
// trailing dims are static), delinearized over the top's sizes at the run and followed down to
// the buffer (symView). Everything else is the static kernel's at the run's sizes, so each sums
// in its order.

// readsViews reports whether symbolic kernel k's reduction reads views at the run's sizes: it
// has sizes that are neither a layer's (symlayer.go) nor a symbolic row length's (symrowlen.go).
func readsViews(k plan.Kernel, rp plan.Reduction) bool {
	_, rowLen := symRowLen(k, rp.Reduces)
	return k.Symbolic && k.Sizes != nil && !plan.LayerSized(k) && !rowLen
}

// viewDims inserts the dims' parameters before the size (the last of args) of a kernel that
// readsViews.
func viewDims(k plan.Kernel, rp plan.Reduction, args []plan.Arg) []plan.Arg {
	if !readsViews(k, rp) || len(args) == 0 {
		return args
	}
	return slices.Insert(args, len(args)-1, symDimArgs(k.Sizes)...)
}

// bindReduceViews makes kg read each top of a chain of views of k's buffers at the run's sizes
// (kg.at, beside what it binds already: a row of a symbolic length's broadcasts, symrowlen.go),
// its dims' parameters in args. It checks the views in codegen/ptx's words.
func (kg *kgen) bindReduceViews(k plan.Kernel, args []plan.Arg) error {
	sv := kg.newSymView(k, args)
	if kg.at == nil {
		kg.at = map[*irg.Value]func(*index) value.Value{}
	}
	for _, v := range plan.ViewTops(k.Graph, k.Sizes) {
		if err := sv.check(v); err != nil {
			return err
		}
		s := plan.SymSizes(v, k.Sizes)
		last := -1
		for i, e := range s {
			if _, ok := e.IsConst(); !ok {
				last = i
			}
		}
		for i := last + 1; i < len(s); i++ {
			if n, _ := s[i].IsConst(); n != int64(v.Type.Shape[i]) {
				return fmt.Errorf("a reduction reading %s through views whose static dims differ from the bound's does not run at symbolic sizes", v.Type)
			}
		}
		if _, bound := kg.at[v]; bound {
			continue
		}
		kg.at[v] = func(x *index) value.Value {
			buf, lin := sv.foldLin(v, sv.delinearize(s, kg.lin(x))) // symfold_reduce_reshape.go
			return kg.load(buf.Type.DType, kg.ptr[buf], lin)
		}
	}
	return nil
}
