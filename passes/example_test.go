package passes_test

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

func ExampleRun() {
	g, err := ir.Parse("mlp.gir", []byte(`graph mlp {
  input %x : f32[8,4]
  param %w : f32[16,4]
  param %b : f32[16]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[8,16]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[8,16]} : f32[8,16]
  %2 = add(%0, %1) : f32[8,16]
  %3 = relu(%2) : f32[8,16]
  %4 = reduce_max(%3) {axes=[1], keepdims=true} : f32[8,1]
  %5 = broadcast_in_dim(%4) {dims=[0,1], shape=[8,16]} : f32[8,16]
  %6 = sub(%3, %5) : f32[8,16]
  %7 = exp(%6) : f32[8,16]
  %8 = reduce_sum(%7) {axes=[1], keepdims=true} : f32[8,1]
  %9 = broadcast_in_dim(%8) {dims=[0,1], shape=[8,16]} : f32[8,16]
  %10 = div(%7, %9) : f32[8,16]
  output y = %10
}`))
	if err != nil {
		panic(err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Kernels)
	fmt.Print(res.Plan)
	fmt.Printf("kernels %d (eager %d)\n", res.Stats.Kernels, res.Stats.EagerKernels)
	// Output:
	// kernels mlp {
	//   input %x : f32[8,4]
	//   param %w : f32[16,4]
	//   param %b : f32[16]
	//   kernel k0_matmul_bias_relu contraction [8,16] reads(%x, %w, %b) writes(%t6) {
	//     %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[8,16]
	//     %1 = broadcast_in_dim(%b) {dims=[1], shape=[8,16]} : f32[8,16]
	//     %2 = add(%0, %1) : f32[8,16]
	//     %3 = relu(%2) : f32[8,16]
	//     output t6 = %3
	//   }
	//   kernel k1_softmax row [8,16] axes=[1] reads(%t6) writes(%y) {
	//     %0 = reduce_max(%t6) {axes=[1], keepdims=true} : f32[8,1]
	//     %1 = broadcast_in_dim(%0) {dims=[0,1], shape=[8,16]} : f32[8,16]
	//     %2 = sub(%t6, %1) : f32[8,16]
	//     %3 = exp(%2) : f32[8,16]
	//     %4 = reduce_sum(%3) {axes=[1], keepdims=true} : f32[8,1]
	//     %5 = broadcast_in_dim(%4) {dims=[0,1], shape=[8,16]} : f32[8,16]
	//     %6 = div(%3, %5) : f32[8,16]
	//     output y = %6
	//   }
	//   output %y : f32[8,16]
	// }
	// arena 512 bytes (greedy-by-size; lower bound 512, 512 aligned; naive 512)
	//   t6           offset         0 size       512 live k0..k1
	// kernels 2 (eager 11)
}
