package autodiff_test

import (
	"fmt"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// The gradient of Σ tanh(x·w) with respect to w.
func ExampleGrad() {
	g, err := frontend.Build("f", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F64, 2)
		w := b.Param("w", ir.T(ir.F64, 2), frontend.Zeros())
		b.Output("loss", x.Mul(w).Tanh().Sum())
	})
	if err != nil {
		panic(err)
	}
	gg, err := autodiff.Grad(g, "loss", []string{"w"})
	if err != nil {
		panic(err)
	}
	out, err := ref.Run(gg,
		map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(ir.F64, 2), []float64{1, 2})},
		map[string]*tensor.Tensor{"w": tensor.FromFloats(ir.T(ir.F64, 2), []float64{0, 0.5})})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.6f\n", out["grad.w"].F) // x·(1 - tanh²(x·w))
	ok, why := autodiff.Differentiable("floor", 0)
	fmt.Println(ok, why)
	// Output:
	// [1.000000 0.839949]
	// false its derivative is zero almost everywhere; compute the input without parameters, or leave it out of the loss
}
