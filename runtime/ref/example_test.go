package ref_test

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// A linear layer with a relu, y = relu(x·wᵀ + b), built with package ir and run on the reference
// interpreter.
func ExampleRun() {
	g := ir.NewGraph("tiny")
	x := g.Input("x", ir.T(ir.F32, 2, 3), nil)
	w := g.Param("w", ir.T(ir.F32, 2, 3), nil)
	b := g.Param("b", ir.T(ir.F32, 2), nil)
	xw := g.Add("dot_general", ir.T(ir.F32, 2, 2), ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, x, w)
	bb := g.Add("broadcast_in_dim", ir.T(ir.F32, 2, 2), ir.Attrs{"shape": []int{2, 2}, "dims": []int{1}}, b)
	g.SetOutput("y", g.Add("relu", ir.T(ir.F32, 2, 2), nil, g.Add("add", ir.T(ir.F32, 2, 2), nil, xw, bb)))
	fmt.Print(g)

	out, err := ref.Run(g,
		map[string]*tensor.Tensor{"x": tensor.FromFloats(x.Type, []float64{1, 2, 3, -1, -2, -3})},
		map[string]*tensor.Tensor{
			"w": tensor.FromFloats(w.Type, []float64{1, 0, 0, 0.5, 0.5, 0.5}),
			"b": tensor.FromFloats(b.Type, []float64{0.25, -1}),
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("y =", out["y"].Type, out["y"].F)
	// Output:
	// graph tiny {
	//   input %x : f32[2,3]
	//   param %w : f32[2,3]
	//   param %b : f32[2]
	//   %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,2]
	//   %1 = broadcast_in_dim(%b) {dims=[1], shape=[2,2]} : f32[2,2]
	//   %2 = add(%0, %1) : f32[2,2]
	//   %3 = relu(%2) : f32[2,2]
	//   output y = %3
	// }
	// y = f32[2,2] [1.25 2 0 0]
}
