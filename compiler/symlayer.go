package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Layers of a stacked input. An RNN's initial state [layers, batch, hidden] laid out at the
// run's sizes holds layer l's rows from l·batch rows on, where the bound's code would find them
// at l·bound. A slice that cuts only the static dims leading the input's rows and keeps the rest
// whole (h0[l], a view of one layer) reads one contiguous block of it: a row value of its own,
// with its own row count, whose first element is at an offset that is an expression of the dims
// (ptx.LayerOffset: 32·batch elements for layer 1 of f32[2,batch,32]). The kernel reads the
// view as an input of the slice's type from that offset, which codegen/ptx computes at the run's
// sizes from the stacked input's symbolic sizes (Kernel.Sizes; its symlayer.go). Layer 0 starts
// at 0: a prefix of the rows, read as any row value is. Past the first layer, the static size
// after the rows must be whole 16-byte groups, so that the offset keeps the bound's vector
// loads aligned; any other view keeps its refusal (the input's and the view's two row counts).
//
// The same holds for writes: a concat along a static dim leading its rows (h_n = [h_0; h_1], the
// layers' last states stacked) whose only use is as the body's output writes each operand, a
// row value with the operands' rows, as a layer of the output at its offset: the stage runs over
// the operands' rows and stores operand j at the output's address plus the offset of its first
// element (codegen/ptx takes the concat's symbolic sizes, Kernel.Sizes).

// layerInputs returns the body's symbolic inputs that are read only through layer views (types
// are the values' symbolic types, symTypes).
func layerInputs(body *ir.Graph, types map[*ir.Value]ir.Type) map[*ir.Value]bool {
	ok := map[*ir.Value]bool{}
	for _, v := range body.Values {
		if v.Op == ir.OpInput && types[v].Sym != nil {
			ok[v] = true
		}
	}
	for _, o := range body.Outputs {
		delete(ok, o.Value)
	}
	for _, v := range body.Values {
		for _, a := range v.Args {
			if ok[a] && !layerView(v, types[a], types[v]) {
				delete(ok, a)
			}
		}
	}
	return ok
}

// layerView reports whether v is a slice of an operand of type t (result type rt) with unit
// strides that cuts only the static dims leading t's rows, into a block contiguous in t (the
// dims after the first it keeps more than one of are whole), and keeps every other dim whole.
func layerView(v *ir.Value, t, rt ir.Type) bool {
	if v.Op != "slice" || len(v.Args) != 1 || rt.Sym == nil || t.Sym == nil {
		return false
	}
	q := slices.IndexFunc(t.Sym, func(e sym.Expr) bool { return !isConst(e) })
	if q < 1 {
		return false // no static dim leads the rows: not stacked
	}
	if st := v.Attrs.Ints("stride"); slices.ContainsFunc(st, func(s int) bool { return s != 1 }) {
		return false
	}
	start := v.Attrs.Ints("start")
	cut := false // a dim before this one keeps more than one index
	for i := range t.Sym {
		whole := start[i] == 0 && rt.Sym[i].Equal(t.Sym[i])
		switch {
		case i >= q || cut:
			if !whole {
				return false
			}
		case rt.Shape[i] != 1:
			cut = true
		}
	}
	if isConst(ptx.LayerOffset(start, t.Sym)) {
		return true
	}
	// Past the first layer: the offset is a multiple of the static size after the last symbolic
	// dim, which must hold whole vector groups (16 bytes) for the view's loads to stay aligned.
	p, _ := rowsOf(t)
	return t.Shape[p:].NumElements()*t.DType.Size()%16 == 0
}

// symTypes returns the symbolic types of kernel k's body values: its inputs keep their buffers'
// symbolic types, and a value at the bound takes that of the pass graph's value it computes
// (Kernel.Origins).
func symTypes(k *passes.Kernel) map[*ir.Value]ir.Type {
	types := map[*ir.Value]ir.Type{}
	for _, v := range k.Body.Values {
		types[v] = v.Type
		if o := k.Origins[v]; v.Type.Sym == nil && o != nil && o.Type.Shape.Equal(v.Type.Shape) {
			types[v] = o.Type
		}
	}
	return types
}

// layerConcats returns the body's symbolic concats that write layers of the body's outputs:
// along a static dim that leads their rows, all of whose dims before it are 1 (so each operand is
// one contiguous block), of operands of one symbolic type whose static size after the rows is
// whole 16-byte groups, used by no value (only as outputs).
func layerConcats(body *ir.Graph, types map[*ir.Value]ir.Type) map[*ir.Value]bool {
	ok := map[*ir.Value]bool{}
	for _, v := range body.Values {
		t := types[v]
		if v.Op != "concat" || t.Sym == nil {
			continue
		}
		axis := v.Attrs.Int("axis", 0)
		q := slices.IndexFunc(t.Sym, func(e sym.Expr) bool { return !isConst(e) })
		p, _ := rowsOf(t)
		if axis >= q || slices.ContainsFunc(t.Shape[:axis], func(n int) bool { return n != 1 }) ||
			t.Shape[p:].NumElements()*t.DType.Size()%16 != 0 {
			continue
		}
		same := func(a *ir.Value) bool {
			return types[a].Sym != nil && slices.EqualFunc(types[a].Sym, types[v.Args[0]].Sym, sym.Expr.Equal)
		}
		if !slices.ContainsFunc(v.Args, func(a *ir.Value) bool { return !same(a) }) {
			ok[v] = true
		}
	}
	for _, v := range body.Values {
		for _, a := range v.Args {
			delete(ok, a)
		}
	}
	return ok
}

// layerSizes returns the symbolic sizes of k's inputs that some layer view reads past their first
// element and of its layer concats (what codegen/ptx needs to compute their offsets at the run's
// sizes), and the first such view or concat.
func layerSizes(k *passes.Kernel) (map[*ir.Value][]sym.Expr, *ir.Value) {
	types := symTypes(k)
	layers, concats := layerInputs(k.Body, types), layerConcats(k.Body, types)
	var (
		sizes map[*ir.Value][]sym.Expr
		first *ir.Value
	)
	add := func(v, sized *ir.Value) {
		if sizes == nil {
			sizes, first = map[*ir.Value][]sym.Expr{}, v
		}
		sizes[sized] = types[sized].Sym
	}
	for _, v := range k.Body.Values {
		switch {
		case concats[v]:
			add(v, v)
		case len(v.Args) == 1 && layers[v.Args[0]] && !isConst(ptx.LayerOffset(v.Attrs.Ints("start"), types[v.Args[0]].Sym)):
			add(v, v.Args[0])
		}
	}
	return sizes, first
}

// layerRefusal is why k, a kernel that is not a persistent kernel's stage, cannot read or write
// its layers past the first, or "": only a persistent kernel's stages and row loop kernels
// offset their buffers yet.
func layerRefusal(k *passes.Kernel) string {
	_, v := layerSizes(k)
	if v == nil {
		return ""
	}
	format := strings.TrimSuffix(k.Body.Format(v), v.Type.String()) + symTypes(k)[v].String()
	return fmt.Sprintf("%s reads or writes a layer of a stacked buffer at an offset of the run's rows, which only a persistent kernel's stage or an elementwise row kernel takes yet", format)
}
