package executor_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// A bind-time kernel (BatchNorm's rsqrt(running_var+eps), from parameters only) runs on the
// first run after weights are bound and not on the runs after it, whose results still match the
// reference: its output survives in the arena. Binding new weights runs it again.
func TestBindTimeKernelsRunOnce(t *testing.T) {
	g, err := frontend.Build("convbn", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 2, 3, 6, 6)
		y := nn.NewConv2d(b, "conv", 3, 4, 3, nn.Conv2dOptions{Padding: 1}).Forward(x)
		b.Output("y", nn.NewBatchNorm2d(b, "bn", 4).Forward(y).Relu())
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bind := 0
	for _, k := range res.Artifact.Plan.Kernels {
		if k.BindTime {
			bind++
		}
	}
	if bind != 1 || len(res.Artifact.Plan.Kernels) != 2 {
		t.Fatalf("%d of %d kernels bind-time, want 1 of 2", bind, len(res.Artifact.Plan.Kernels))
	}
	prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	params := map[string]*tensor.Tensor{}
	for i, p := range g.Params() {
		params[p.Name] = tensor.RandomInput(p, uint64(i+1))
	}
	params["bn.running_var"] = tensor.FromFloats(ir.T(ir.F32, 4), []float64{0.5, 1, 2, 4})
	for step, tc := range []struct {
		setVar   []float64 // new running_var to bind first, if any
		launches int
	}{{nil, 2}, {nil, 1}, {nil, 1}, {[]float64{9, 0.25, 1, 3}, 2}, {nil, 1}} {
		if tc.setVar != nil {
			params["bn.running_var"] = tensor.FromFloats(ir.T(ir.F32, 4), tc.setVar)
			if err := prog.SetParams(params); err != nil {
				t.Fatal(err)
			}
		} else if step == 0 {
			if err := prog.SetParams(params); err != nil {
				t.Fatal(err)
			}
		}
		in := map[string]*tensor.Tensor{"x": tensor.RandomInput(g.Inputs()[0], uint64(10+step))}
		got, err := prog.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Kernels) != tc.launches {
			t.Errorf("run %d launched %d kernels, want %d", step, len(got.Kernels), tc.launches)
		}
		want, err := ref.Run(g, in, params)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want["y"].F {
			if d := got.Outputs["y"].F[i] - w; d > 1e-5 || d < -1e-5 {
				t.Fatalf("run %d: y[%d] = %v, want %v", step, i, got.Outputs["y"].F[i], w)
			}
		}
	}
}

// A model without parameters can still have bind-time kernels (a kernel computing from
// constants alone): they run on the first run although no weights were ever bound.
func TestBindTimeWithoutParams(t *testing.T) {
	g, err := frontend.Build("mask", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 64, 64)
		m := b.Tensor(make([]float64, 64), ir.F32, 64).AddScalar(2).Exp() // broadcast over rows
		b.Output("y", x.Mul(m))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without constant folding exp(0+2) is a kernel of its own that reads nothing.
	res, err := compiler.Compile(g, compiler.Options{Passes: passes.Options{DisablePasses: []string{"fold"}}})
	if err != nil {
		t.Fatal(err)
	}
	bind := 0
	for _, k := range res.Artifact.Plan.Kernels {
		if k.BindTime {
			bind++
		}
	}
	if bind != 1 {
		t.Fatalf("%d bind-time kernels of %d, want 1", bind, len(res.Artifact.Plan.Kernels))
	}
	prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	in := map[string]*tensor.Tensor{"x": tensor.RandomInput(g.Inputs()[0], 3)}
	got, err := prog.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want["y"].F {
		if math.Abs(got.Outputs["y"].F[i]-w) > 1e-5*(1+math.Abs(w)) {
			t.Fatalf("y[%d] = %v, want %v", i, got.Outputs["y"].F[i], w)
		}
	}
}
