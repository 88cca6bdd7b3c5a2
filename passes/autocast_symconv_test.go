package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// Autocast casts a convolution's weight-gradient operands over a symbolic batch before their
// views (the cast keeps the batch leading, the views move it), and after them in a static graph,
// as always; both graphs verify.
func TestAutocastConvWeightGradViews(t *testing.T) {
	for _, tc := range []struct {
		dims, batch string
		bound       int
		castFirst   bool
	}{
		{"  dims { batch in [1,8] }\n", "batch", 8, true},
		{"", "8", 8, false},
	} {
		src := "graph s {\n" + tc.dims + "  input %x : f32[" + tc.batch + ",2,5,5]\n  input %dy : f32[" + tc.batch + ",4,5,5]\n" +
			"  %0 = transpose(%x) {perm=[1,0,2,3]} : f32[2," + tc.batch + ",5,5]\n" +
			"  %1 = reshape(%dy) {shape=[8,1,4,5,5]} : f32[" + tc.batch + ",1,4,5,5]\n  %2 = transpose(%1) {perm=[1,2,0,3,4]} : f32[1,4," + tc.batch + ",5,5]\n" +
			"  %3 = reshape(%2) {shape=[4,8,5,5]} : f32[4," + tc.batch + ",5,5]\n" +
			"  %4 = conv2d(%0, %3) {padding=[1,1]} : f32[2,4,3,3]\n  output dw = %4\n}\n"
		c := autocastSource(t, src)
		for _, v := range c.Values {
			if v.Op != "conv2d" {
				continue
			}
			for _, a := range v.Args {
				u := a
				for u.Op == "reshape" || u.Op == "transpose" {
					u = u.Args[0]
				}
				if first := u != a && u.Op == "cast" && u.Args[0].Op == ir.OpInput; first != tc.castFirst || a.Type.DType != ir.BF16 {
					t.Errorf("%q: operand %s: cast before the views %v, want %v\n%s", tc.dims, c.Format(a), first, tc.castFirst, c)
				}
			}
		}
	}
}
