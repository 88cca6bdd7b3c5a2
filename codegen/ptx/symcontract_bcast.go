package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// An epilogue broadcast of a tensor at the run's sizes beside a symbolic batched product: a mask
// [b, 1, t, seq] over the heads of q·kᵀ [b, h, t, seq], a bias [seq] or [t, 1] along its rows.
// The tensor is contiguous at the run's sizes, so the bound's strides (what a broadcast's
// operand index delinearizes over) would read the wrong element. The epilogue knows every
// coordinate of the result's element (the batch's from grid.z, the row and the column); the
// broadcast maps them to the tensor's (a dim of size 1 reads coordinate 0: stride 0), whose
// linear index is taken at the run's strides (symView.lin), evaluated from the dims' parameters.
// FFMA and tensor cores share the epilogue's evaluation, so both read it so. (With M or N
// symbolic the result is [batch..., M, N] and the epilogue sets every coordinate; with both
// static only the leading batch dim may be symbolic, and the coordinates delinearized from the
// run's linear index over the bound's shape are the run's.)

// symBroadcasts binds each epilogue broadcast of a buffer whose sizes (k.Sizes) are symbolic,
// read element by element at the run's strides; it must run in the prologue (the strides it
// hoists dominate every element).
func (mm *matmul) symBroadcasts(k Kernel, b *builder) error {
	chain := map[*ir.Value]bool{}
	for _, a := range mm.dot.Args {
		for u := a; ; u = u.Args[0] {
			chain[u] = true
			if u.Op == ir.OpInput || u.Op == ir.OpParam || len(u.Args) == 0 {
				break
			}
		}
	}
	for _, v := range k.Graph.Values {
		if chain[v] || v.Op != "broadcast_in_dim" || k.Sizes[v] == nil {
			continue
		}
		buf := v.Args[0]
		if buf.Op != ir.OpInput && buf.Op != ir.OpParam {
			return fmt.Errorf("an epilogue broadcast of a computed value at symbolic sizes does not run beside a batched product")
		}
		if err := mm.symv.check(b, v); err != nil {
			return err
		}
		mm.symv.hoist(b, buf)
		mm.bound[v] = func(x *index) val {
			c := make([]string, len(x.shape))
			for d := range c {
				c[d] = x.getCoord(mm.a, d)
			}
			t, lin := mm.symv.lin(b, v, c)
			return mm.load(t, lin)
		}
	}
	return nil
}
