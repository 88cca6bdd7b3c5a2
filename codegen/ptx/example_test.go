package ptx_test

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// A fused bias + relu kernel: its comment lists the ops it fuses, its launch what each parameter
// binds.
func ExampleGenerate() {
	g := ir.NewGraph("k0")
	x := g.Input("x", ir.T(ir.F32, 64, 256), nil)
	b := g.Param("b", ir.T(ir.F32, 256), nil)
	bb := g.Add("broadcast_in_dim", x.Type, ir.Attrs{"shape": []int{64, 256}, "dims": []int{1}}, b)
	g.SetOutput("y", g.Add("relu", x.Type, nil, g.Add("add", x.Type, nil, x, bb)))

	text, launch, err := ptx.Generate(ptx.Kernel{Name: "k0_bias_relu", Graph: g}, ptx.Target{SM: 80})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(text, "\n")[:9] {
		fmt.Println(line)
	}
	fmt.Println("grid", launch.Grid, "block", launch.Block)
	for _, a := range launch.Params {
		fmt.Println(a.Kind, a.Index, a.Name)
	}
	fmt.Println("vector loads:", strings.Count(text, "ld.global.v4.f32"))
	// Output:
	// // k0_bias_relu fuses:
	// //   %0 = broadcast_in_dim(%b) {dims=[1], shape=[64,256]} : f32[64,256]
	// //   %1 = add(%x, %0) : f32[64,256]
	// //   %2 = relu(%1) : f32[64,256]
	// .visible .entry k0_bias_relu(
	// 	.param .u64 k0_bias_relu_param_0,
	// 	.param .u64 k0_bias_relu_param_1,
	// 	.param .u64 k0_bias_relu_param_2
	// )
	// grid [16 1 1] block [256 1 1]
	// input 0 x
	// param 0 b
	// output 0 y
	// vector loads: 2
}
