package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// Reductions read through views. A bias gradient over the rows whose operand merges
// attention's heads back ([batch, h, seq, d] transposed and reshaped into [batch, seq, h·d], the
// packed in-projection's three of them padded into [batch, seq, 3·h·d]) reads buffers whose rows
// are not the kernel's, and so does a layer norm or a softmax over those merged rows. The
// compiler hands the views' sizes over (Kernel.Sizes, its symfold_reduce_view.go); every
// reduction template takes the dims they name as parameters before its size (the folded count,
// the row count, or the split reduction's count), and reads each top of a chain of views at its
// linear index, which is the same at the bound and at the run (its rows lead, its trailing dims
// are static), delinearized over the top's sizes at the run and followed down to the buffer
// (symview.go). Everything else is the static kernel's at the run's sizes: the column fold's row
// loop, the row template's rows (one block each) and its scattered fold over the kept elements,
// the split reduction's shares, so each sums in the static kernel's order.

// readsViews reports whether symbolic kernel k's reductions reds read views at the run's sizes:
// it has sizes that are neither a layer's (symlayer.go) nor a symbolic row length's
// (symrowlen.go).
func readsViews(k Kernel, reds []*ir.Value) bool {
	_, rowLen := symRowLen(k, reds)
	return k.Symbolic && k.Sizes != nil && !layerSized(k) && !rowLen
}

// symReduceViews loads the dims of a symbolic reduction's views, or nil without sizes. The row
// and split templates call it where the kernel readsViews.
func symReduceViews(k Kernel, b *builder, args *[]Arg) (*symView, error) {
	if !k.Symbolic || k.Sizes == nil || layerSized(k) { // a layer's sizes: symlayer.go
		return nil, nil
	}
	return checkViewTops(k, b, symViewLoad(k, b, args, k.Sizes))
}

// rowLenViews is the symView of a row reduction of a symbolic length (symrowlen.go) whose dims
// are loaded (dims), or nil when it reads no views: a softmax over the keys read through a
// transpose that moves them last reads the top at the run's linear index as every template does.
func rowLenViews(k Kernel, b *builder, dims map[string]string) (*symView, error) {
	if len(plan.ViewTops(k.Graph, k.Sizes)) == 0 {
		return nil, nil
	}
	return checkViewTops(k, b, dims)
}

// checkViewTops returns the symView of k's views over the dims' registers, or why a top of a
// chain of views does not run at symbolic sizes.
func checkViewTops(k Kernel, b *builder, dims map[string]string) (*symView, error) {
	sv := &symView{dims: dims, sizes: k.Sizes}
	for _, v := range plan.ViewTops(k.Graph, k.Sizes) {
		if err := sv.check(b, v); err != nil {
			return nil, err
		}
		s := SymSizes(v, k.Sizes)
		last := -1
		for i, e := range s {
			if !isConst(e) {
				last = i
			}
		}
		for i := last + 1; i < len(s); i++ {
			if n, _ := s[i].IsConst(); n != int64(v.Type.Shape[i]) {
				return nil, fmt.Errorf("a reduction reading %s through views whose static dims differ from the bound's does not run at symbolic sizes", v.Type)
			}
		}
	}
	return sv, nil
}

// hoistViewTops evaluates, in the prologue, the strides of the buffers under sv's tops that
// multiply dims (symView.hoist) for the column fold of the rows, whose threads loop over the
// rows, each of which would compute them again. Templates whose threads read a few elements each
// keep them per element: once per warp in the prologue costs more there (docs/perf.md).
func hoistViewTops(b *builder, sv *symView, g *ir.Graph) {
	if sv == nil {
		return
	}
	for _, v := range plan.ViewTops(g, sv.sizes) {
		sv.hoist(b, v)
	}
}

// bindViewTops makes gn read each top of a chain of views of the kernel's symbolic buffers at
// the run's sizes.
func bindViewTops(gn *gen, sv *symView, g *ir.Graph) {
	if sv == nil {
		return
	}
	b := gn.e.b
	for _, v := range plan.ViewTops(g, sv.sizes) {
		s := SymSizes(v, sv.sizes)
		gn.bound[v] = func(x *index) val {
			buf, lin := sv.foldLin(b, v, sv.foldCoords(b, s, x.getLin(gn.a))) // symfold_reduce_reshape.go
			return gn.load(buf, lin)
		}
	}
}
