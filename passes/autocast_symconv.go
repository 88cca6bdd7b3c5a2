package passes

import (
	"maps"

	"github.com/gcomp/gcomp/ir"
)

// lowViews casts a convolution's operand that views a symbolic buffer with its batch moved from
// the lead (a weight gradient's x viewed [C/G, G·batch, H, W] or dy viewed [O, batch, OH, OW]
// over a symbolic batch, passes/autodiff's gradConv) by casting the viewed value and viewing the
// cast: the same numbers, but what a kernel computes before the convolution then keeps the batch
// leading (a cast after the views would be a kernel writing the batch moved, which no kernel
// over a symbolic batch does), and the convolution reads the cast through the views as the
// compiler's symconv.go folds it. nil for another operand (cast as always).
func lowViews(a *ir.Value, dt ir.DType, low map[*ir.Value]*ir.Value, mk func(*ir.Value) *ir.Value) *ir.Value {
	if a.Type.Sym == nil {
		return nil
	}
	if _, static := a.Type.Axis(0).IsConst(); !static {
		return nil // the batch leads: cast as always
	}
	var chain []*ir.Value
	u := a
	for u.Op == "reshape" || u.Op == "transpose" {
		chain = append(chain, u)
		u = u.Args[0]
	}
	if len(chain) == 0 || u.Type.Sym == nil {
		return nil
	}
	if _, static := u.Type.Axis(0).IsConst(); static || u.Type.DType != ir.F32 {
		return nil
	}
	l := low[u]
	if l == nil {
		l = mk(&ir.Value{Op: "cast", Type: retype(u.Type, dt), Attrs: ir.Attrs{"to": dt}, Args: []*ir.Value{u}, Pos: a.Pos})
		low[u] = l
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		l = mk(&ir.Value{Op: c.Op, Type: retype(c.Type, dt), Attrs: maps.Clone(c.Attrs), Args: []*ir.Value{l}, Pos: c.Pos})
	}
	return l
}
