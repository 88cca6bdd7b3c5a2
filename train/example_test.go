package train_test

import (
	"fmt"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// Fit y = 2x - 1 with a linear layer and SGD on the reference device.
func ExampleRunRef() {
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 4, 1)
		y := b.Input("y", frontend.F32, 4, 1)
		w := b.Param("w", ir.T(ir.F32, 1, 1), frontend.Zeros())
		bias := b.Param("b", ir.T(ir.F32, 1), frontend.Zeros())
		b.Output("loss", frontend.MSELoss(frontend.Linear(x, w, bias), y))
	}
	step, err := train.Step("linreg", model, &train.SGD{LR: 0.1, Momentum: 0.9}, train.Options{})
	if err != nil {
		panic(err)
	}
	params, _ := train.InitParams(step.Graph, 0)
	batch := map[string]*tensor.Tensor{
		"x": tensor.FromFloats(ir.T(ir.F32, 4, 1), []float64{0, 1, 2, 3}),
		"y": tensor.FromFloats(ir.T(ir.F32, 4, 1), []float64{-1, 1, 3, 5}),
	}
	res, err := train.RunRef(step, params, 200, func(int) (map[string]*tensor.Tensor, error) { return batch, nil })
	if err != nil {
		panic(err)
	}
	fmt.Printf("loss %.3f -> %.6f\n", res.Losses[0], res.Losses[199])
	fmt.Printf("w %.4f, b %.4f\n", res.Params["w"].F[0], res.Params["b"].F[0])
	fmt.Println(step.StateBindings["new.w"], step.StateBindings["new.opt.w.momentum_buffer"])
	// Output:
	// loss 9.000 -> 0.000000
	// w 2.0000, b -1.0000
	// w opt.w.momentum_buffer
}
