package passes

import (
	"maps"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// lowViews casts a convolution's operand that views a symbolic buffer with its batch moved from
// the lead (a weight gradient's x viewed [C/G, G·batch, H, W] or dy viewed [O, batch, OH, OW]
// over a symbolic batch, passes/autodiff's gradConv) by casting the viewed value and viewing the
// cast: the same numbers, but what a kernel computes before the convolution then keeps the batch
// leading (a cast after the views would be a kernel writing the batch moved, which no kernel
// over a symbolic batch does), and the convolution reads the cast through the views as the
// compiler's symconv.go folds it. nil for another operand (cast as always).
//
// The same holds for any contraction's operand whose views move the rows (symRows) of a
// symbolic value, as splitting attention's heads does: [batch, seq, 3·E] sliced and viewed
// [batch, H, seq, E/H] has batch·H·seq rows where the projection wrote batch·seq.
func lowViews(a *ir.Value, dt ir.DType, low map[*ir.Value]*ir.Value, mk func(*ir.Value) *ir.Value) *ir.Value {
	if a.Type.Sym == nil {
		return nil
	}
	var chain []*ir.Value
	u := a
	for u.Op == "reshape" || u.Op == "transpose" || u.Op == "slice" {
		chain = append(chain, u)
		u = u.Args[0]
	}
	if len(chain) == 0 || u.Type.Sym == nil || u.Type.DType != ir.F32 {
		return nil
	}
	l := low[u]
	if u.Op == "cast" && u.Args[0].Type.DType == dt {
		l = u.Args[0] // a contraction's result cast back (sinkCast): viewed as it is, in dt
	} else {
		_, aStatic := a.Type.Axis(0).IsConst()
		_, uStatic := u.Type.Axis(0).IsConst()
		if uStatic || !aStatic && symRows(a.Type).Equal(symRows(u.Type)) {
			return nil // the views keep the rows: cast as always
		}
	}
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

// symRows is the row count of a symbolic type as a kernel over symbolic sizes sees it: the
// product of its axes up to its last symbolic one.
func symRows(t ir.Type) sym.Expr {
	p := 0
	for i, e := range t.Sym {
		if _, c := e.IsConst(); !c {
			p = i + 1
		}
	}
	r := sym.Const(1)
	for _, e := range t.Sym[:p] {
		r = sym.Mul(r, e)
	}
	return r
}
