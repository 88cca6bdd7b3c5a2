package frontend_test

import (
	"fmt"

	"github.com/gcomp/gcomp/frontend"
)

// A linear layer and a softmax, as a model function. Every value records the line of the model
// code that made it.
func Example() {
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 8, 2)
		fc := b.Sub("linear")
		w := fc.Param("weight", frontend.T(frontend.F32, 5, 2), frontend.DefaultUniform(2))
		bias := fc.Param("bias", frontend.T(frontend.F32, 5), frontend.DefaultUniform(2))
		b.Output("y", frontend.Linear(x, w, bias).Softmax(-1))
	}
	g, err := frontend.Build("linreg", model)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// graph linreg {
	//   input %x : f32[8,2] loc("example_test.go:13")
	//   param %linear.weight : f32[5,2] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475} loc("example_test.go:15")
	//   param %linear.bias : f32[5] {high=0.7071067811865475, init="uniform", low=-0.7071067811865475} loc("example_test.go:16")
	//   %0 = dot_general(%x, %linear.weight) {lhs_contract=[1], rhs_contract=[1]} : f32[8,5] loc("example_test.go:17")
	//   %1 = broadcast_in_dim(%linear.bias) {dims=[1], shape=[8,5]} : f32[8,5] loc("example_test.go:17")
	//   %2 = add(%0, %1) : f32[8,5] loc("example_test.go:17")
	//   %3 = reduce_max(%2) {axes=[1], keepdims=true} : f32[8,1] loc("example_test.go:17")
	//   %4 = broadcast_in_dim(%3) {dims=[0,1], shape=[8,5]} : f32[8,5] loc("example_test.go:17")
	//   %5 = sub(%2, %4) : f32[8,5] loc("example_test.go:17")
	//   %6 = exp(%5) : f32[8,5] loc("example_test.go:17")
	//   %7 = reduce_sum(%6) {axes=[1], keepdims=true} : f32[8,1] loc("example_test.go:17")
	//   %8 = broadcast_in_dim(%7) {dims=[0,1], shape=[8,5]} : f32[8,5] loc("example_test.go:17")
	//   %9 = div(%6, %8) : f32[8,5] loc("example_test.go:17")
	//   output y = %9
	// }
}

// A shape mistake is returned as an error at the line of the call that made it.
func ExampleBuild_error() {
	_, err := frontend.Build("mlp", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 64, 784)
		w := b.Param("w", frontend.T(frontend.F32, 128, 10), frontend.Zeros())
		b.Output("y", x.Matmul(w))
	})
	fmt.Println(err)
	// Output:
	// example_test.go:49: matmul: inner dimensions differ: x is f32[64,784], w is f32[128,10]
}
