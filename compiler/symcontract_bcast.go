package compiler

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// A batched product with a symbolic free dim (M or N) may add a tensor of the run's sizes read
// through views: a mask [b, 1, t, seq] (or [t, seq]) broadcast over the heads of q·kᵀ
// [b, h, t, seq], a bias [seq] or [t, 1] along the result's rows, a mask [b, seq, t] transposed
// before its broadcast, a residual [b·t, d] reshaped to scores·V's [b, t, d]. The tensor follows
// the run's sizes (it is contiguous at them), so its rows are not the result's: codegen/ptx's
// GEMM epilogue reads it at the result element's coordinates (every one known there: batch, row,
// column) mapped down the chain of views (transpose, reshape, slice, broadcast) at the run's
// sizes, at the buffer's own strides at the run, a broadcast dim's stride 0 (symcontract_bcast.go
// there). Only a chain of views of a buffer every use of which (and of each view below the top)
// is such a view, or a read as it is at the product's sizes, is read so; its top must have the
// product's sizes.

// isView reports whether v is a view the epilogue follows at the run's sizes.
func isView(v *ir.Value) bool {
	switch v.Op {
	case "transpose", "reshape", "slice", "broadcast_in_dim":
		return true
	}
	return false
}

// runViews returns kernel k's epilogue chains of views of buffers of symbolic sizes that the
// GEMM reads at the run's strides beside product dot (operand views chain): every value of them
// down to the buffer; or why one cannot be. A buffer (or view) also read otherwise is left to the
// other checks.
func runViews(k *passes.Kernel, types map[*ir.Value]ir.Type, chain map[*ir.Value]bool, dot *ir.Value, format func(*ir.Value) string) (map[*ir.Value]bool, string) {
	uses := map[*ir.Value][]*ir.Value{}
	for _, v := range k.Body.Values {
		for _, a := range v.Args {
			uses[a] = append(uses[a], v)
		}
	}
	for _, o := range k.Body.Outputs {
		uses[o.Value] = append(uses[o.Value], nil)
	}
	viewedOnly := func(v *ir.Value) bool { // every use a view outside the operands'
		for _, u := range uses[v] {
			if u == nil || !isView(u) || chain[u] {
				return false
			}
		}
		return true
	}
	out := map[*ir.Value]bool{}
	for _, v := range k.Body.Values {
		if chain[v] || !isView(v) || viewedOnly(v) {
			continue // not a top: read by a view above it
		}
		var vals []*ir.Value
		u := v
		for ; isView(u); u = u.Args[0] {
			vals = append(vals, u)
		}
		// The buffer may be read as it is too where it has the product's sizes (at the result
		// element's linear index at the run: symcontract_free.go).
		if !buffer(u) || types[u].Sym == nil || !viewedOnly(u) && !sameSizes(types[u].Sym, types[dot].Sym) {
			continue
		}
		only := true
		for _, w := range vals[1:] {
			only = only && viewedOnly(w)
		}
		if !only {
			continue
		}
		if !sameSizes(types[v].Sym, types[dot].Sym) {
			return nil, fmt.Sprintf("%s views a tensor of the run's sizes at other sizes than the product's %s", format(v), types[dot])
		}
		for _, w := range append(vals, u) {
			out[w] = true
		}
	}
	return out, ""
}
