package ptx

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// A GEMV's row outputs (gemv.RowOutput): values of its row prologue that later kernels read, as
// the first layer's residual reads the embeddings its norm normalizes. The first block writes
// them once its prologue is done, its 256 threads a strided share of the elements each (a
// staged row is read from shared memory); the other blocks only compute with them. A gather
// among them reads its rows bounds checked, in every block, as every gather does (indexcheck.go).

// gemvRowOutputs emits the stores of g's row outputs of dot, by block (0, 0, 0): of the run's
// rows only in a symbolic GEMV (s).
func (gn *gen) gemvRowOutputs(g *ir.Graph, dot *ir.Value, p gemv.Plan, tid, bx, by, bz string, s *symGEMV) error {
	outs := rowOutputs(g, dot)
	if len(outs) == 0 {
		return nil
	}
	b := gn.e.b
	b.note("row outputs: the first block writes %d prologue values", len(outs))
	skip := b.label("no_row_outputs")
	first, other := b.reg(rU32), b.reg(rPred)
	b.ins("or.b32", first, bx, by)
	b.ins("or.b32", first, first, bz)
	b.ins("setp.ne.u32", other, first, "0")
	b.braIf(other, skip)
	for _, i := range outs {
		o := g.Outputs[i].Value
		gn.loopTo(tid, imm(gemv.Threads), gemvRowElems(b, s, o.Type.Shape.NumElements(), p.M), func(r string) error {
			x, err := gn.eval(o, newIndexLin(o.Type.Shape, r))
			if err != nil {
				return err
			}
			gn.store(o, gn.outPtr[i], r, x)
			return nil
		})
		gn.reset()
	}
	b.place(skip)
	return gn.err
}

// rowOutputs lists the indexes of g's outputs that are row outputs of dot.
func rowOutputs(g *ir.Graph, dot *ir.Value) []int {
	var outs []int
	for i, o := range g.Outputs {
		if o.Value != dot && gemv.RowOutput(dot, o.Value) {
			outs = append(outs, i)
		}
	}
	return outs
}
