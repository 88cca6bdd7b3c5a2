package compiler

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// A graph with dims is planned at its bounds (the passes see Shapes, which hold them) and its
// kernels run at the sizes of each run. A kernel whose buffers keep symbolic sizes takes a size
// at the run's sizes as a parameter: a flat elementwise loop kernel its element count
// (codegen/ptx's symloop.go), a kernel whose symbolic values are rows over a static inner size
// its row count scaled to its template's unit (symrows.go); any other is refused naming it.

// symKernel is what a symbolic kernel's size parameter follows: rows, an expression over the
// dims, of which the bound has Bound.
type symKernel struct {
	rows   sym.Expr
	bound  int
	stages []*symKernel             // a persistent kernel's, by stage (sympersist.go)
	sizes  map[*ir.Value][]sym.Expr // the values' sizes of a strided kernel (attention, a GEMM over views)
	// boundGrid: the launch's grid is the bound's at every size (a batched fold, symfold_view.go).
	boundGrid bool
}

// symbolicKernels returns, for a graph with dims, the rows of each kernel whose buffers are
// symbolic (by kernel name), or the error naming the first kernel that cannot run at sizes
// other than the bound. Every producer takes them (codegen/nvvm's sym*.go mirror codegen/ptx's
// templates); a template one cannot take is its error naming the kernel.
func symbolicKernels(g *ir.Graph, kg *passes.KernelGraph, _ backend.Producer) (map[string]symKernel, error) {
	if len(g.Dims) == 0 {
		return nil, nil
	}
	ranges := sym.Ranges{}
	for _, d := range g.Dims {
		ranges[d.Name] = sym.Interval{Lo: int64(d.Lo), Hi: int64(d.Hi)}
	}
	kernels := map[string]symKernel{}
	for _, k := range kg.Kernels {
		var names []string
		for _, v := range k.Body.Inputs() {
			names = append(names, v.Name)
		}
		for _, v := range k.Body.Params() {
			names = append(names, v.Name)
		}
		for _, o := range k.Body.Outputs {
			names = append(names, o.Name)
		}
		symbolic, static := "", ""
		for _, n := range names {
			if b := kg.Buffer(n); b != nil && b.Type.Sym != nil {
				symbolic = n
			} else {
				static = n
			}
		}
		refuse := func(why string) error {
			over := "over symbolic buffer " + symbolic
			if symbolic == "" {
				over = "over static buffers"
			}
			return fmt.Errorf("graph %s has symbolic dims: %s kernel %s (%s), %s: %s", g.Name, k.Kind, k.Name, opNames(k.Ops), over, why)
		}
		if len(k.Stages) > 0 {
			stages, err := persistentRows(k, ranges, refuse)
			if err != nil {
				return nil, err
			}
			kernels[k.Name] = symKernel{stages: stages}
			continue
		}
		if _, update := ptx.UpdateOp(k.Body); k.Kind != passes.Loop || k.BindTime || update {
			if why := layerRefusal(k); why != "" { // symlayer.go: only row loops offset their buffers
				return nil, refuse(why)
			}
		}
		if symbolic == "" {
			// Static buffers only: compiled as always, unless a value inside has symbolic sizes,
			// which a static result can only have folded (a sum over a broadcast's rows).
			if _, why := rowKernel(k, false); why != "" {
				return nil, refuse(why)
			}
			continue
		}
		var (
			rows  sym.Expr
			sizes map[*ir.Value][]sym.Expr // a product's operand read through views (symstride.go)
		)
		if k.Kind == passes.Attention {
			as, why := attentionSizes(k, kg, ranges) // symattn.go
			if why != "" {
				return nil, refuse(why)
			}
			symbolicOutputs(k, kg, as) // symattn.go
			kernels[k.Name] = symKernel{rows: sym.Const(1), sizes: as}
			continue
		}
		if k.Kind == passes.Loop && static == "" && ptx.SymbolicLoop(k.Body) == "" && !k.BindTime {
			rows = sym.Const(1) // flat: every element is a row
			for _, e := range kg.Buffer(k.Body.Outputs[0].Name).Type.Sym {
				rows = sym.Mul(rows, e)
			}
		} else {
			unbatchWeights(k) // symstride.go
			r, why := rowKernel(k, !k.BindTime)
			switch {
			case k.Kind == passes.Contraction:
				r, sizes, why = viewRows(k, kg, ranges, r, why) // symstride.go
				if sizes == nil {
					r, sizes, why = foldViews(k, kg, ranges, r, why) // symfold_view.go
				}
				if sizes == nil {
					r, sizes, why = contractViews(k, kg, ranges, r, why) // symcontract.go
				}
				if why != "" {
					if cr, cs, ok := convFold(k); ok { // symconv.go
						r, sizes, why = cr, cs, ""
					}
				}
			case why != "" && k.Kind == passes.Row:
				r0, why0 := r, why
				r, sizes, why = rowLength(k, r, why) // symrowlen.go
				if why != "" && !k.BindTime {
					if fr, fs, fwhy := foldReduceViews(k, kg, ranges, r0, why0); fwhy == "" { // symfold_reduce_view.go
						r, sizes, why = fr, fs, ""
					}
				}
				if why != "" && !k.BindTime {
					r, sizes, why = rowLengthReadingViews(k, kg, ranges, r0, why) // symfold_reduce_view.go
				}
			case why != "" && k.Kind == passes.Loop && !k.BindTime && rowBroadcasts(k):
				r0, why0 := r, why
				r, sizes, why = rowBroadcast(k, r, why) // symrowlen.go
				if why != "" {
					r, sizes, why = rowBroadcastReadingViews(k, kg, ranges, r0, why0) // symfold_reduce_view.go
				}
			case why != "" && k.Kind == passes.Loop && (ptx.SymbolicCopy(k.Body) == "" || ptx.SymbolicConcat(k.Body) == "") && !k.BindTime:
				r, sizes, why = copyRows(k, kg, ranges, why) // symstride.go (a concat: codegen/ptx's symconcat.go)
			}
			if why != "" {
				return nil, refuse(concatRefusal(k, why) + "; a kernel runs at symbolic sizes when its rows (every dim up to the last symbolic one) are independent") // symconcat.go
			}
			if k.Kind == passes.Loop && sizes == nil {
				sizes, _ = layerSizes(k) // its layers past the first, at offsets of the run's rows
			}
			rows = r
		}
		_, hi, err := rows.Range(ranges)
		if err != nil || rows.Overflowed() || hi >= 1<<31 {
			return nil, refuse(fmt.Sprintf("its row count %s overflows", rows))
		}
		if k.BindTime {
			// It reads parameters only and runs once, when they are bound, before any size is
			// known: its rows are independent and lead its shapes, so it computes them all at
			// the bound, and every run reads the first of them.
			continue
		}
		kernels[k.Name] = symKernel{rows: rows, bound: int(hi), sizes: sizes, boundGrid: k.Kind == passes.Contraction && batchedFold(k, sizes)}
	}
	return kernels, nil
}

// atBound is a symbolic kernel's body as codegen/ptx takes it: its buffers' types at their
// bounds (the body keeps the buffers' symbolic sizes, which it has no dims to verify).
func atBound(body *ir.Graph) *ir.Graph {
	c := body.Clone()
	for _, v := range c.Values {
		v.Type.Sym = nil
	}
	return c
}

// planDims records the dims and the symbolic sizes of the inputs and outputs in plan.
func planDims(plan *artifact.Plan, g *ir.Graph, kg *passes.KernelGraph) {
	if len(g.Dims) == 0 {
		plan.Version = artifact.StaticVersion
		return
	}
	for _, d := range g.Dims {
		plan.Dims = append(plan.Dims, artifact.Dim{Name: d.Name, Lo: d.Lo, Hi: d.Hi})
	}
	// The memory plan's types are the symbolic ones; the plan's are the bounds, beside Sym.
	plan.Inputs, plan.Outputs = slices.Clone(plan.Inputs), slices.Clone(plan.Outputs)
	for _, set := range [][]artifact.IOBuffer{plan.Inputs, plan.Outputs} {
		for i := range set {
			b := kg.Buffer(set[i].Name)
			if b == nil || b.Type.Sym == nil {
				continue
			}
			set[i].Type = ir.Type{DType: b.Type.DType, Shape: b.Type.Shape}.String()
			set[i].Sym = make([]string, len(b.Type.Sym))
			for j, e := range b.Type.Sym {
				set[i].Sym[j] = e.String()
			}
		}
	}
}
