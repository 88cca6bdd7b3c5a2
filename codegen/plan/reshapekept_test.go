package plan

import (
	"testing"

	"github.com/gcomp/gcomp/ir/sym"
)

// TestReshapeKept: the leading and trailing dims a reshape keeps never overlap, and a dim is
// kept only where both sides are equal at every run's sizes.
func TestReshapeKept(t *testing.T) {
	seq, c := sym.Sym("seq"), sym.Const
	for _, tc := range []struct {
		name     string
		out, in  []sym.Expr
		pre, suf int
	}{
		{"heads merged", []sym.Expr{c(2), seq, c(8)}, []sym.Expr{c(2), seq, c(2), c(4)}, 2, 0},
		{"rows flattened", []sym.Expr{sym.Scale(seq, 2), c(8)}, []sym.Expr{c(2), seq, c(8)}, 0, 1},
		{"heads split", []sym.Expr{c(2), seq, c(2), c(4)}, []sym.Expr{c(2), seq, c(8)}, 2, 0},
		{"a unit dim added", []sym.Expr{c(2), c(1), seq, c(8)}, []sym.Expr{c(2), seq, c(8)}, 1, 2},
		{"the same sizes", []sym.Expr{c(2), seq}, []sym.Expr{c(2), seq}, 2, 0},
		{"seq moved", []sym.Expr{seq, c(16)}, []sym.Expr{c(16), seq}, 0, 0},
		{"a scalar", nil, []sym.Expr{c(1)}, 0, 0},
	} {
		if pre, suf := ReshapeKept(tc.out, tc.in); pre != tc.pre || suf != tc.suf {
			t.Errorf("%s: ReshapeKept = %d, %d, want %d, %d", tc.name, pre, suf, tc.pre, tc.suf)
		}
	}
}
