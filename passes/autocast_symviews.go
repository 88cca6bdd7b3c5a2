package passes

import (
	"maps"

	"github.com/gcomp/gcomp/ir"
)

// sinkCast moves a contraction's cast back to f32 past view v (a reshape, transpose or slice)
// when v moves the rows (symRows) of a symbolic value, as merging attention's heads does
// ([batch, H, seq, E/H] viewed [batch, seq, H, E/H]): v becomes the cast of the same view of the
// dt value. The numbers are the same, but the kernel that casts then reads the contraction's
// result through the view and writes the view's rows (a cast before the view would be a kernel
// writing rows the view then moves, which no kernel over symbolic sizes does); the view is made
// with mk. Another value is left alone.
func sinkCast(v *ir.Value, dt ir.DType, mk func(*ir.Value) *ir.Value) {
	if v.Op != "reshape" && v.Op != "transpose" && v.Op != "slice" || v.Type.Sym == nil {
		return
	}
	c := v.Args[0]
	if c.Op != "cast" || c.Type.DType != ir.F32 || c.Args[0].Type.DType != dt || c.Type.Sym == nil {
		return
	}
	_, vStatic := v.Type.Axis(0).IsConst()
	_, cStatic := c.Type.Axis(0).IsConst()
	if vStatic == cStatic && symRows(v.Type).Equal(symRows(c.Type)) {
		return
	}
	w := mk(&ir.Value{Op: v.Op, Type: retype(v.Type, dt), Attrs: maps.Clone(v.Attrs), Args: []*ir.Value{c.Args[0]}, Pos: v.Pos})
	v.Op, v.Attrs, v.Args = "cast", ir.Attrs{"to": ir.F32}, []*ir.Value{w}
}
