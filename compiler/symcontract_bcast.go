package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// A batched product with a symbolic free dim (M or N) may add a tensor broadcast to the result's
// sizes: a mask [b, 1, t, seq] (or [t, seq]) over the heads of q·kᵀ [b, h, t, seq], a bias [seq]
// or [t, 1] along the result's rows. The tensor follows the run's sizes (it is contiguous at
// them), so its rows are not the result's: codegen/ptx's GEMM epilogue reads it at the result
// element's coordinates (every one known there: batch, row, column) mapped through the
// broadcast, at its own strides at the run, the broadcast dims' stride 0 (symcontract_bcast.go
// there). Only a broadcast_in_dim of a buffer every use of which is such a broadcast is read so;
// any other view of a tensor at the run's sizes stays refused.

// runBroadcasts returns kernel k's epilogue broadcasts of buffers of symbolic sizes that the
// GEMM reads at the run's strides beside product dot (operand views chain), with their buffers;
// or why one cannot be. A buffer also read otherwise is left to the other checks.
func runBroadcasts(k *passes.Kernel, types map[*ir.Value]ir.Type, chain map[*ir.Value]bool, dot *ir.Value, format func(*ir.Value) string) (map[*ir.Value]bool, string) {
	uses := map[*ir.Value][]*ir.Value{}
	for _, v := range k.Body.Values {
		for _, a := range v.Args {
			uses[a] = append(uses[a], v)
		}
	}
	for _, o := range k.Body.Outputs {
		uses[o.Value] = append(uses[o.Value], nil)
	}
	out := map[*ir.Value]bool{}
	for _, v := range k.Body.Values {
		if chain[v] || v.Op != "broadcast_in_dim" || !buffer(v.Args[0]) || types[v.Args[0]].Sym == nil {
			continue
		}
		buf := v.Args[0]
		only := true
		for _, u := range uses[buf] {
			only = only && u != nil && u.Op == "broadcast_in_dim" && !chain[u]
		}
		if !only {
			continue
		}
		if !sameSizes(types[v].Sym, types[dot].Sym) {
			return nil, fmt.Sprintf("%s broadcasts a tensor of the run's sizes to other sizes than the product's %s", format(v), types[dot])
		}
		out[v], out[buf] = true, true
	}
	return out, ""
}
