package frontend_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestPositionsSymbolizedOnce: a model repeating one layer gets every op's position right, and
// the return addresses on its stacks are symbolized once, not once per op: building 12 layers
// symbolizes no address that building one did not.
func TestPositionsSymbolizedOnce(t *testing.T) {
	_, _, line, _ := runtime.Caller(0)
	layer := func(x *frontend.Tensor) *frontend.Tensor {
		return x.Exp().Relu() // line+2
	}
	build := func(layers int) *ir.Graph {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 4) // line+6
			for range layers {
				x = layer(x)
			}
			b.Output("y", x)
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, layers := range []int{1, 12} {
		before := frontend.SymbolizedAddresses()
		g := build(layers)
		if n := frontend.SymbolizedAddresses() - before; layers > 1 && n != 0 {
			t.Errorf("%d layers symbolized %d more addresses, want none", layers, n)
		}
		if len(g.Values) != 1+2*layers {
			t.Fatalf("%d layers: %d values", layers, len(g.Values))
		}
		for i, v := range g.Values {
			want := fmt.Sprintf("position_test.go:%d", line+2)
			if i == 0 {
				want = fmt.Sprintf("position_test.go:%d", line+6)
			}
			if v.Pos != want {
				t.Errorf("%d layers: %s at %q, want %q", layers, g.Format(v), v.Pos, want)
			}
		}
	}
}
