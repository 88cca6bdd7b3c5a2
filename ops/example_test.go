package ops_test

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

func ExampleInfer() {
	x, w := ir.T(ir.F32, 64, 784), ir.T(ir.F32, 128, 784)
	mm := ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}
	t, err := ops.Infer("dot_general", []ir.Type{x, w}, mm)
	fmt.Println(t, err)
	_, err = ops.Infer("dot_general", []ir.Type{x, ir.T(ir.F32, 128, 10)}, mm)
	fmt.Println(err)
	_, err = ops.Infer("reduce_sum", []ir.Type{ir.T(ir.F32, 2, 3)}, ir.Attrs{"axes": []int{4}})
	fmt.Println(err)
	fmt.Println(ops.ClassOf("relu"), ops.ClassOf("conv2d"))
	// Output:
	// f32[64,128] <nil>
	// dot_general: inner dimensions differ: f32[64,784] and f32[128,10]
	// reduce_sum: axis 4 out of range for f32[2,3]
	// elementwise contraction
}

// Eval computes one node from its operands' values: here max, whose NaN propagates and whose
// max(-0, +0) is +0, in f16.
func ExampleEval() {
	t := ir.T(ir.F16, 4)
	a := tensor.FromFloats(t, []float64{1, 0.1, math.Copysign(0, -1), 3})
	b := tensor.FromFloats(t, []float64{2, 0.2, 0, math.NaN()})
	r, err := ops.Eval(&ir.Value{Op: "max", Type: t}, []*tensor.Tensor{a, b})
	fmt.Println(r.F, err)
	// Output:
	// [2 0.199951171875 0 NaN] <nil>
}
