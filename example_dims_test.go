package gcomp_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

// Build one model for every batch from 1 to 8: the function declares its batch with b.Batch, and
// MaxBatch makes it the dim batch in [1, 8]. The inputs' and outputs' Shape holds the bound,
// Dims each axis's size and Lo its smallest; a run takes any batch in range.
func ExampleOptions_maxBatch() {
	model, err := gcomp.Compile("rows", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, b.Batch(2), 3)
		b.Output("y", nn.NewLinear(b, "fc", 3, 2).Forward(x).Relu())
	}, gcomp.Options{MaxBatch: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dims:   ", model.Dims())
	fmt.Println("inputs: ", model.Inputs())
	fmt.Println("outputs:", model.Outputs())
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "sim", Pool: 1, Weights: tinyWeights()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, x := range []*gcomp.Tensor{
		gcomp.Float32([]float32{1, 2, 3}, 1, 3),
		gcomp.Float32([]float32{1, 2, 3, -1, 0, 0, 2, 2, 2}, 3, 3),
	} {
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": x})
		if err != nil {
			fmt.Println(err)
			return
		}
		y, _ := out["y"].Float32s()
		fmt.Println(out["y"].Shape(), y)
	}
	_, err = s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 27), 9, 3)})
	fmt.Println(errors.Is(err, gcomp.ErrShapeMismatch), err)
	// Output:
	// dims:    [{batch 1 8}]
	// inputs:  [{x f32 [8 3] dims [batch 3] lo [1 3]}]
	// outputs: [{y f32 [8 2] dims [batch 2] lo [1 2]}]
	// [1 2] [1.25 2]
	// [3 2] [1.25 2 0 0 2.25 2]
	// true gcomp: input x: dim 0 (batch) is 9, outside batch's range [1,8]
}
