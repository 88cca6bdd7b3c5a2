package load

import "testing"

// A zero-field module as the last argument of a call spanning lines once crashed the interpreter
// ("model.go:10: panic: reflect: Field index out of bounds").
func TestEmptyStructLastArgument(t *testing.T) {
	for _, module := range []string{"nn.ReLU{}", "nn.SiLU{}", "nn.Sigmoid{}", "nn.Tanh{}"} {
		src := `package toy

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 8)
	s := nn.NewSequential(nn.NewLinear(b, "0", 8, 8),
		` + module + `)
	b.Output("y", s.Forward(x))
}
`
		g, err := Source("model.go", []byte(src), Options{})
		if err != nil {
			t.Errorf("%s: %v", module, err)
			continue
		}
		if w := g.Lookup("0.weight"); w == nil || w.Pos != "model.go:10" {
			t.Errorf("%s: 0.weight is not declared at model.go:10:\n%s", module, g)
		}
	}
}
