package passes_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Autocast splits attention's heads over a symbolic seq in the low dtype: the packed projection
// (plus bias) is cast once before the slices and views that move its rows, and attention's
// result is viewed back in the low dtype and read so by the output projection (no cast kernel
// writes rows its views move). A static graph casts after the views, as always; both verify.
func TestAutocastHeadSplitViews(t *testing.T) {
	for _, tc := range []struct {
		dims, batch, seq string
		castFirst        bool
	}{
		{"  dims { batch in [1,4], seq in [1,7] }\n", "batch", "seq", true},
		{"", "4", "7", false},
	} {
		bs := tc.batch + "," + tc.seq
		src := "graph s {\n" + tc.dims + "  input %x : f32[" + bs + ",8]\n  input %w : f32[24,8]\n  input %b : f32[" + bs + ",24]\n  input %o : f32[8,8]\n" +
			"  %0 = dot_general(%x, %w) {lhs_contract=[2], rhs_contract=[1]} : f32[" + bs + ",24]\n  %1 = add(%0, %b) : f32[" + bs + ",24]\n"
		for i, h := range []string{"q", "k", "v"} {
			src += strings.NewReplacer("H", h, "S", []string{"0", "8", "16"}[i], "E", []string{"8", "16", "24"}[i], "BS", bs, "B", tc.batch, "Q", tc.seq).Replace(
				"  %sH = slice(%1) {start=[0,0,S], limit=[4,7,E]} : f32[BS,8]\n  %rH = reshape(%sH) {shape=[4,7,2,4]} : f32[BS,2,4]\n  %tH = transpose(%rH) {perm=[0,2,1,3]} : f32[B,2,Q,4]\n")
		}
		src += "  %a = attention(%tq, %tk, %tv) {mask=\"none\", scale=0.5} : f32[" + tc.batch + ",2," + tc.seq + ",4]\n" +
			"  %m = transpose(%a) {perm=[0,2,1,3]} : f32[" + bs + ",2,4]\n  %n = reshape(%m) {shape=[4,7,8]} : f32[" + bs + ",8]\n" +
			"  %y = dot_general(%n, %o) {lhs_contract=[2], rhs_contract=[1]} : f32[" + bs + ",8]\n  output y = %y\n}\n"
		c := autocastSource(t, src)
		root := func(a *ir.Value) *ir.Value {
			for a.Op == "reshape" || a.Op == "transpose" || a.Op == "slice" {
				a = a.Args[0]
			}
			return a
		}
		for _, v := range c.Values {
			switch v.Op {
			case ops.AttentionOp:
				for _, a := range v.Args {
					u := root(a)
					if first := u != a && u.Op == "cast" && u.Args[0].Op == "add"; first != tc.castFirst || a.Type.DType != ir.BF16 {
						t.Errorf("%q: attention's operand %s: cast before the views %v, want %v\n%s", tc.dims, c.Format(a), first, tc.castFirst, c)
					}
				}
			case "dot_general":
				if a := v.Args[0]; a.Args[0].Op != ir.OpInput {
					u := root(a)
					if direct := u != a && u.Op == ops.AttentionOp; direct != tc.castFirst || a.Type.DType != ir.BF16 {
						t.Errorf("%q: the output projection's operand %s: attention's result viewed in bf16 %v, want %v\n%s", tc.dims, c.Format(a), direct, tc.castFirst, c)
					}
				}
			}
		}
	}
}

// autocastSource is AutocastGraph(bf16) of the graph src, which must verify after it.
func autocastSource(t *testing.T, src string) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("s.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c := passes.AutocastGraph(g, ir.BF16)
	if err := ops.Verify(c); err != nil {
		t.Fatalf("%v\n%s", err, c)
	}
	return c
}
