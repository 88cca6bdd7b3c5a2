package gcomp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// tiny is y = relu(x·Wᵀ + b) for a batch of 2 rows of 3 features: the model a Go program
// compiles from its own code.
func tiny(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 3)
	b.Output("y", nn.NewLinear(b, "fc", 3, 2).Forward(x).Relu())
}

// tinyWeights are fc.weight [[1,0,0],[0.5,0.5,0.5]] and fc.bias [0.25,-1].
func tinyWeights() map[string]*gcomp.Tensor {
	return map[string]*gcomp.Tensor{
		"fc.weight": gcomp.Float32([]float32{1, 0, 0, 0.5, 0.5, 0.5}, 2, 3),
		"fc.bias":   gcomp.Float32([]float32{0.25, -1}, 2),
	}
}

// Compile a model a Go function builds; its batch is the function's.
func ExampleCompile() {
	model, err := gcomp.Compile("tiny", tiny, gcomp.Options{Target: "sm_80"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("inputs: ", model.Inputs())
	fmt.Println("outputs:", model.Outputs())
	fmt.Println("params: ", model.Params())
	fmt.Println("kernels:", len(model.Artifact().Plan.Kernels) > 0)
	// Output:
	// inputs:  [{x f32 [2 3]}]
	// outputs: [{y f32 [2 2]}]
	// params:  [{fc.weight f32 [2 3]} {fc.bias f32 [2]}]
	// kernels: true
}

// Compile a model file: a .gir graph here; model.go and .onnx files load the same way.
func ExampleCompileFile() {
	model, err := gcomp.CompileFile("testdata/affine.gir", gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "ref", InitWeights: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)})
	if err != nil {
		fmt.Println(err)
		return
	}
	y, _ := out["y"].Float32s()
	fmt.Println(model.Name(), out["y"], y)
	// Output: affine f32[2] [6 15]
}

// Compile a graph built with package ir.
func ExampleCompileGraph() {
	g := ir.NewGraph("double")
	x := g.Input("x", ir.T(ir.F32, 4), nil)
	g.SetOutput("y", g.Add("add", ir.T(ir.F32, 4), nil, x, x))
	model, err := gcomp.CompileGraph(g, gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "sim"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32([]float32{1, 2, 3, 4}, 4)})
	if err != nil {
		fmt.Println(err)
		return
	}
	y, _ := out["y"].Float32s()
	fmt.Println(y)
	// Output: [2 4 6 8]
}

// Open a session on the PTX simulator with weights from a map, and run it.
func ExampleOpen() {
	model, err := gcomp.Compile("tiny", tiny, gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "sim", Weights: tinyWeights(), Pool: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	x := []float32{1, 2, 3, -1, -2, -3}
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32(x, 2, 3)})
	if err != nil {
		fmt.Println(err)
		return
	}
	y, _ := out["y"].Float32s() // the slice the device's bytes were read into
	fmt.Println(s.Device(), y)
	// Output: sim (PTX simulator) [1.25 2 0 0]
}

// Run on the reference interpreter; the outputs are the same as the compiled kernels'.
func ExampleSession_Run() {
	model, err := gcomp.Compile("tiny", tiny, gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "ref", Weights: tinyWeights()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32([]float32{1, 2, 3, -1, -2, -3}, 2, 3)})
	if err != nil {
		fmt.Println(err)
		return
	}
	y, _ := out["y"].Float32s()
	fmt.Println(y)
	// Output: [1.25 2 0 0]
}

// Errors are typed: a wrong shape is an ErrShapeMismatch whose *ShapeError names the input,
// and a run past its deadline wraps context.DeadlineExceeded and says where it stopped.
func ExampleSession_Run_errors() {
	model, err := gcomp.Compile("tiny", tiny, gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "sim", Weights: tinyWeights()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	_, err = s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 3), 1, 3)})
	var se *gcomp.ShapeError
	fmt.Println(errors.Is(err, gcomp.ErrShapeMismatch), errors.As(err, &se) && se.Name == "x", err)

	ctx, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	_, err = s.Run(ctx, map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 6), 2, 3)})
	fmt.Println(errors.Is(err, context.DeadlineExceeded), err)
	// Output:
	// true true input x is f32[1,3], the model wants f32[2,3]
	// true run stopped before kernel k0_matmul_bias_relu (1 of 1): context deadline exceeded
}

// A view's slice is the tensor's memory: no copy is made on the way to the device.
func ExampleView() {
	ids := []int64{3, 1, 4}
	t := gcomp.View(ids, 3)
	same, _ := gcomp.Values[int64](t)
	same[0] = 9
	fmt.Println(t, t.DType(), t.Shape(), ids)
	// Output: i64[3] i64 [3] [9 1 4]
}

// Host tensors carry the dtypes Go has no slice for, f16 here.
func ExampleFromHost() {
	g := ir.NewGraph("half")
	x := g.Input("x", ir.T(ir.F16, 3), nil)
	g.SetOutput("y", g.Add("mul", ir.T(ir.F16, 3), nil, x, x))
	model, err := gcomp.CompileGraph(g, gcomp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := gcomp.Open(model, gcomp.SessionOptions{Device: "sim"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.FromHost(tensor.FromFloats(x.Type, []float64{0.5, 3, 1000}))})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["y"], out["y"].Host().F)
	// Output: f16[3] [0.25 9 +Inf]
}

// Compile under autocast (torch.autocast at inference): the matmul runs in bf16 on tensor cores
// with f32 accumulation, the weight's cast runs once when weights are bound, and the output stays
// f32. The reference interpreter runs the same autocast graph, so both devices agree.
func ExampleCompile_autocast() {
	model, err := gcomp.Compile("tiny", tiny, gcomp.Options{AMP: "bf16"})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan := model.Artifact().Plan
	bind := 0
	for _, k := range plan.Kernels {
		if k.BindTime {
			bind++
		}
	}
	fmt.Println("amp:", plan.AMP, "kernels:", len(plan.Kernels), "at bind time:", bind)
	x := gcomp.Float32([]float32{1.01, 2, 3, -1, -2, -3}, 2, 3) // 1.01 is 1.0078125 in bf16
	for _, dev := range []string{"sim", "ref"} {
		s, err := gcomp.Open(model, gcomp.SessionOptions{Device: dev, Weights: tinyWeights()})
		if err != nil {
			fmt.Println(err)
			return
		}
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": x})
		s.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		y, _ := out["y"].Float32s()
		fmt.Println(dev, out["y"].DType(), y)
	}
	// Output:
	// amp: bf16 kernels: 3 at bind time: 1
	// sim f32 [1.2578125 2 0 0]
	// ref f32 [1.2578125 2 0 0]
}
