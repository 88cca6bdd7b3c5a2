package nvvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/gemv"
	irg "github.com/gcomp/gcomp/ir"
)

// A GEMV's row outputs (gemv.RowOutput), as codegen/ptx's gemvnormout.go: values of its norm
// prologue that later kernels read (the embeddings a decode step's first norm normalizes). The
// first block writes them after its prologue, its threads a strided share of the elements each,
// evaluated through the kernel graph (a gather among them bounds checked, as every gather is);
// at symbolic sizes the run's rows only. The direct template stores the other outputs at the
// product's index.

// rowOutputs splits the indexes of g's outputs into dot's row outputs and the others.
func rowOutputs(g *irg.Graph, dot *irg.Value) (rows, others []int) {
	for i, o := range g.Outputs {
		if o.Value != dot && gemv.RowOutput(dot, o.Value) {
			rows = append(rows, i)
		} else {
			others = append(others, i)
		}
	}
	return rows, others
}

// storePrologueRows has block 0's T threads (tid) store row outputs outs of dot's prologue of M
// rows: every row at the bound's sizes, the run's m rows (the size parameter over dot's N
// columns a row) at symbolic ones.
func (kg *kgen) storePrologueRows(dot *irg.Value, outs []int, M int, tid value.Value, T int) error {
	if len(outs) == 0 {
		return nil
	}
	var err error
	kg.branch(kg.b.NewICmp(enum.IPredEQ, kg.sreg("ctaid.x"), ci(0)), "row_outputs", func() {
		for _, i := range outs {
			n := kg.g.Outputs[i].Value.Type.Shape.NumElements()
			var end value.Value = ci(n)
			if kg.size != nil {
				m := kg.b.NewUDiv(kg.size, ci(dot.Type.Shape.NumElements()/M))
				end = kg.mul(m, n/M)
			}
			kg.loopTo(tid, ci(T), end, func(r value.Value) {
				if e := kg.storeRowOutputs([]int{i}, r); e != nil && err == nil {
					err = e
				}
			})
		}
	})
	return err
}
