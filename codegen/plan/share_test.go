package plan

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestShareKeySizes: symbolic kernels alike at the bound share code only when the sizes the
// compiler handed them agree too (a layer of a stacked state at another offset, a view over other
// dims), and a static kernel never shares a symbolic one's code.
func TestShareKeySizes(t *testing.T) {
	g, err := ir.Parse("k.gir", []byte(`graph g {
  input %x : f32[8,4]
  %y = exp(%x) : f32[8,4]
  output y = %y
}`))
	if err != nil {
		t.Fatal(err)
	}
	x := g.Inputs()[0]
	b := sym.Sym("batch")
	kernel := func(symbolic bool, rows sym.Expr) Kernel {
		k := Kernel{Graph: g, Symbolic: symbolic}
		if symbolic {
			k.Sizes = map[*ir.Value][]sym.Expr{x: {rows, sym.Const(4)}}
		}
		return k
	}
	for _, c := range []struct {
		name  string
		a, b  Kernel
		share bool
	}{
		{"same sizes", kernel(true, b), kernel(true, b), true},
		{"other rows", kernel(true, b), kernel(true, sym.Scale(b, 2)), false},
		{"static and symbolic", kernel(false, b), kernel(true, b), false},
		{"static", kernel(false, b), kernel(false, b), true},
	} {
		if got := ShareKey(c.a) == ShareKey(c.b); got != c.share {
			t.Errorf("%s: keys equal %v, want %v:\n%s\n%s", c.name, got, c.share, ShareKey(c.a), ShareKey(c.b))
		}
	}
}
