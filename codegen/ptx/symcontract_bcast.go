package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// An epilogue reading a tensor at the run's sizes through views beside a symbolic batched
// product: a mask [b, 1, t, seq] broadcast over the heads of q·kᵀ [b, h, t, seq], a bias [seq]
// or [t, 1] along its rows, a mask transposed before its broadcast, a residual [b·t, d] reshaped
// to scores·V's [b, t, d]. The tensor is contiguous at the run's sizes, so the bound's strides
// (what a view's operand index delinearizes over) would read the wrong element. The epilogue
// knows every coordinate of the result's element (the batch's from grid.z, the row and the
// column); the chain of views maps them down to the buffer's at the run's sizes (symView.lin: a
// transpose permutes them, a broadcast dim of size 1 reads coordinate 0, a reshape linearizes
// and delinearizes at the run, a slice offsets), whose linear index is taken at the run's
// strides, evaluated from the dims' parameters. FFMA and tensor cores share the epilogue's
// evaluation, so both read it so. (With M or N symbolic the result is [batch..., M, N] and the
// epilogue sets every coordinate; with both static only the leading batch dim may be symbolic,
// and the coordinates delinearized from the run's linear index over the bound's shape are the
// run's.)

// symBroadcasts binds each top of an epilogue chain of views of a buffer whose sizes (k.Sizes)
// are symbolic, read element by element at the run's strides; it must run in the prologue (the
// strides it hoists dominate every element).
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
		if chain[v] || k.Sizes[v] == nil {
			continue
		}
		if !epilogueView(v) {
			continue
		}
		u := v
		for epilogueView(u) {
			u = u.Args[0]
		}
		if u.Op != ir.OpInput && u.Op != ir.OpParam {
			return fmt.Errorf("an epilogue %s of a computed value at symbolic sizes does not run beside a batched product", v.Op)
		}
		if err := mm.symv.check(b, v); err != nil {
			return err
		}
	}
	for _, v := range plan.ViewTops(k.Graph, k.Sizes) {
		if chain[v] {
			continue
		}
		mm.symv.hoist(b, v)
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

// epilogueView reports whether v is a view an epilogue reads through at the run's sizes.
func epilogueView(v *ir.Value) bool {
	switch v.Op {
	case "transpose", "reshape", "slice", "broadcast_in_dim":
		return true
	}
	return false
}
