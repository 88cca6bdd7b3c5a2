package frontend

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// UpdateSlice writes update's rows into t along dim at a position per batch row (dim 0):
// result[b, …, start[b]+i, …] = update[b, …, i, …], every other element t's, as
// `t[b, ..., start[b]:start[b]+T] = update[b]` does in PyTorch for each b. start is an integer
// tensor [B]; a position past S−T (or below 0) is clamped so that the update fits
// (docs/ops.md, update_slice). Compiled, the result shares t's memory when nothing reads t after
// it, so writing one row of a large KV cache costs that row.
func (t *Tensor) UpdateSlice(dim int, update, start *Tensor) *Tensor {
	s := t.state()
	dim = t.axis("update_slice", dim)
	return s.op(ops.UpdateSliceOp, ir.Attrs{"axis": dim}, t, update, start)
}
