package plan

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestRowBroadcastLoop: a loop is a row-broadcast one when a buffer of the kept sizes (with or
// without the last dim as 1) is broadcast back along a symbolic last dim, whatever views of
// buffers it reads beside; a broadcast over other dims (a mask over heads), along a static last
// dim (a copy's expand), a computed value with sizes or no such broadcast make it another loop.
func TestRowBroadcastLoop(t *testing.T) {
	cases := []struct {
		name, src string
		sized     []string
		want      bool
		static    bool // the sized values' last dim static
	}{
		{"row sums [2, 4, 1]", "input %s : f32[2,4,1]\n  input %e : f32[2,4,9]\n  %b = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,4,9]} : f32[2,4,9]\n  %y = div(%e, %b) : f32[2,4,9]\n",
			[]string{"b"}, true, false},
		{"row sums [2, 4] beside a transposed operand", "input %s : f32[2,4]\n  input %x : f32[2,9,4]\n  %t = transpose(%x) {perm=[0,2,1]} : f32[2,4,9]\n" +
			"  %b = broadcast_in_dim(%s) {dims=[0,1], shape=[2,4,9]} : f32[2,4,9]\n  %y = div(%t, %b) : f32[2,4,9]\n", []string{"b", "t", "x"}, true, false},
		{"a mask over heads, no row sums", "input %m : f32[2,1,9]\n  input %e : f32[2,4,9]\n  %b = broadcast_in_dim(%m) {dims=[0,1,2], shape=[2,4,9]} : f32[2,4,9]\n  %y = mul(%e, %b) : f32[2,4,9]\n",
			[]string{"b"}, false, false},
		{"a per-column tensor along the rows", "input %s : f32[9]\n  input %e : f32[4,9]\n  %b = broadcast_in_dim(%s) {dims=[1], shape=[4,9]} : f32[4,9]\n  %y = mul(%e, %b) : f32[4,9]\n",
			[]string{"b"}, false, false},
		{"a computed value with sizes", "input %s : f32[2,4,1]\n  input %e : f32[2,4,9]\n  %b = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,4,9]} : f32[2,4,9]\n  %y = div(%e, %b) : f32[2,4,9]\n",
			[]string{"b", "y"}, false, false},
		{"an expand along a static last dim beside a view", "input %s : f32[2,4,1]\n  input %x : f32[2,9,4]\n  %t = transpose(%x) {perm=[0,2,1]} : f32[2,4,9]\n" +
			"  %b = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,4,9]} : f32[2,4,9]\n  %y = add(%t, %b) : f32[2,4,9]\n", []string{"b", "t", "x"}, false, true},
		{"a scalar broadcast to a scalar", "input %s : f32[]\n  %b = broadcast_in_dim(%s) {dims=[], shape=[]} : f32[]\n  %y = exp(%b) : f32[]\n",
			[]string{"b"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("k.gir", []byte("graph g {\n  "+tc.src+"  output y = %y\n}\n"))
			if err != nil {
				t.Fatal(err)
			}
			sizes := map[*ir.Value][]sym.Expr{}
			for _, v := range g.Values {
				for _, n := range tc.sized {
					if v.Name == n {
						sizes[v] = constSizes(v.Type.Shape)
						if len(sizes[v]) > 0 && !tc.static {
							sizes[v][len(sizes[v])-1] = sym.Sym("n") // the last dim symbolic
						}
					}
				}
			}
			if got := RowBroadcastLoop(Kernel{Graph: g, Symbolic: true, Sizes: sizes}); got != tc.want {
				t.Errorf("RowBroadcastLoop = %v, want %v", got, tc.want)
			}
			if RowBroadcastLoop(Kernel{Graph: g, Sizes: sizes}) {
				t.Error("a static kernel is a row-broadcast loop")
			}
		})
	}
}

// constSizes is shape as sizes.
func constSizes(shape ir.Shape) []sym.Expr {
	s := make([]sym.Expr, len(shape))
	for i, n := range shape {
		s[i] = sym.Const(int64(n))
	}
	return s
}
