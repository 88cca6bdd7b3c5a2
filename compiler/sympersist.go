package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Persistent kernels of a graph with dims. The passes form them as for the static graph at the
// bound; each stage is checked as a kernel of its own would be (a flat elementwise loop, or a
// row kernel whose symbolic values lead with the same rows), and a symbolic stage takes its
// element count at the run's sizes as a parameter of the persistent kernel (codegen/ptx's
// sympersist.go). The single block's launch does not follow the sizes; its stages' loops do.

// persistentRows returns the rows of each stage of persistent kernel k (nil for a stage over
// static buffers only, and for a bind-time kernel, which runs once at the bound), or the error
// refuse makes of why a stage cannot run at symbolic sizes.
func persistentRows(k *passes.Kernel, ranges sym.Ranges, refuse func(string) error) ([]*symKernel, error) {
	stages := make([]*symKernel, len(k.Stages))
	for i, s := range k.Stages {
		symbolic, static := false, false
		for _, bs := range [][]*passes.Buffer{s.Reads, s.Writes} {
			for _, b := range bs {
				if b.Type.Sym != nil {
					symbolic = true
				} else {
					static = true
				}
			}
		}
		stage := func(why string) error { return refuse(fmt.Sprintf("stage %s (%s): %s", s.Name, opNames(s.Ops), why)) }
		var rows sym.Expr
		r, why := rowKernel(s, false)
		var sizes map[*ir.Value][]sym.Expr
		if cr, cs, ok := convFold(s); why != "" && symbolic && ok { // symconv.go
			r, why, sizes = cr, "", cs
		}
		switch {
		case !symbolic && why != "":
			return nil, stage(why)
		case !symbolic || k.BindTime:
			continue
		case s.Kind == passes.Loop && !static && ptx.SymbolicLoop(s.Body) == "":
			rows = sym.Const(1) // flat: every element is a row
			for _, e := range s.Writes[0].Type.Sym {
				rows = sym.Mul(rows, e)
			}
		case why != "":
			return nil, stage(why + "; a kernel runs at symbolic sizes when its symbolic dims lead every shape and its rows are independent")
		default:
			rows = r
		}
		_, hi, err := rows.Range(ranges)
		if err != nil || rows.Overflowed() || hi >= 1<<31 {
			return nil, stage(fmt.Sprintf("its row count %s overflows", rows))
		}
		stages[i] = &symKernel{rows: rows, bound: int(hi), sizes: sizes}
	}
	return stages, nil
}

// stageKernels are persistent kernel k's stages as codegen/ptx takes them: each stage's body at
// the bound, a symbolic one with its rows (stages, from persistentRows; nil for a static kernel).
func stageKernels(k *passes.Kernel, stages []*symKernel) []ptx.Kernel {
	var out []ptx.Kernel
	for i, s := range k.Stages {
		pk := ptx.Kernel{Name: s.Name, Graph: s.Body}
		if i < len(stages) && stages[i] != nil {
			pk.Graph, pk.Symbolic, pk.Rows = atBound(s.Body), true, stages[i].bound
			sizes, _ := layerSizes(s) // symlayer.go: its layer views' offsets
			if stages[i].sizes != nil {
				sizes = stages[i].sizes // a conv's weight gradient: symconv.go
			}
			pk.Sizes = onClone(sizes, s.Body, pk.Graph)
		} else if stages != nil {
			pk.Graph = atBound(s.Body)
		}
		out = append(out, pk)
	}
	return out
}

// sizeExpr is the expression of a kernel's size parameter a: the element count of its work
// (work), or for a persistent kernel's stage that stage's rows times its units per row.
func (sk symKernel) sizeExpr(work string, a ptx.Arg) string {
	if sk.stages == nil {
		return work
	}
	return sym.Scale(sk.stages[a.Index].rows, int64(a.Scale)).String()
}
