package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir/sym"
)

// The tensor-core attention template (attention_mma.go) at symbolic sizes, as codegen/ptx's
// symattn_mma.go: the dims are parameters (symattn.go binds them and computes L and S), and the
// (batch, head) count B·H, the last row tile ⌈L/64⌉−1 (its blocks run the last row tiles first),
// the operands' offsets and their strides but the innermost are values; the head dims are static
// and contiguous. The position mask's pos is read at the run's batch and each row's key limit
// clamped to the run's S (keyLimit), and the output and log-sum-exp rows lie at the run's L. A
// static kernel keeps the bound's immediates (attnGen.sym nil).

// symMMA is the tensor-core template's sizes at the run beyond symAttn's.
type symMMA struct {
	bh, rtLast value.Value
}

// symbolic computes a symbolic kernel's B·H and last row tile and checks that its operands'
// rows are contiguous at every size; nothing for a static kernel.
func (w *mmaAttn) symbolic() error {
	if w.sym == nil {
		return nil
	}
	kg, sv := w.kg, w.sym.sv
	for i, o := range w.ops {
		if o.symSt == nil {
			continue // an appended cache's (never symbolic here)
		}
		last := len(o.symSt) - 1
		n, ok := num(o.symSt[last])
		if !ok {
			return fmt.Errorf("the tensor-core attention template reads rows contiguous at every size; operand %d's innermost stride is not static", i)
		}
		w.ops[i].strides[last] = n // operandOf's 0 marks "not 1" for the CUDA-core tiles; here the stride itself
	}
	q := plan.SymSizes(w.p.Op.Args[0], sv.sizes)
	bh := sym.Scale(q[0], int64(w.p.H))
	if err := sv.valid(bh); err != nil {
		return err
	}
	if attnmma.Blocks(w.p.Op) >= 1<<31 {
		return fmt.Errorf("%d blocks at the bound exceed the grid", attnmma.Blocks(w.p.Op))
	}
	w.mmaSym = &symMMA{bh: sv.eval(bh)}
	w.mmaSym.rtLast = kg.sub(kg.b.NewUDiv(kg.add(w.sym.l, ci(attnmma.Rows-1)), ci(attnmma.Rows)), ci(1))
	return nil
}

// blockTile is the block's (batch·head, row tile) from its index: the last row tiles first.
func (w *mmaAttn) blockTile(cta value.Value) (bh, rt value.Value) {
	kg, p := w.kg, w.p
	if w.mmaSym == nil {
		rowTiles := (p.L + attnmma.Rows - 1) / attnmma.Rows
		return kg.rem(cta, p.B*p.H), kg.sub(ci(rowTiles-1), kg.div(cta, p.B*p.H))
	}
	return kg.b.NewURem(cta, w.mmaSym.bh), kg.sub(w.mmaSym.rtLast, kg.b.NewUDiv(cta, w.mmaSym.bh))
}

// stMul is x·stride_d(o): the bound's immediate, or the run's stride.
func (w *mmaAttn) stMul(x value.Value, o attnOperand, d int) value.Value {
	if o.symSt == nil {
		return w.kg.mul(x, o.strides[d])
	}
	return w.sym.sv.mul(x, o.symSt[d])
}

// offOf is o's offset.
func (w *mmaAttn) offOf(o attnOperand) value.Value {
	if o.symSt == nil {
		return ci(o.off)
	}
	return o.symOff
}
