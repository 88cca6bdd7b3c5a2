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
	prog, params := loadBN(t, g, res)
	defer prog.Close()
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
		runMatches(t, g, prog, params, step, tc.launches)
	}
}

// runMatches runs prog on a random x (seeded by run) and checks that it launched launches
// kernels and that its y equals the reference's with params (to 1e-5, relative past 1).
func runMatches(t *testing.T, g *ir.Graph, prog *executor.Program, params map[string]*tensor.Tensor, run, launches int) {
	t.Helper()
	in := map[string]*tensor.Tensor{"x": tensor.RandomInput(g.Inputs()[0], uint64(10+run))}
	got, err := prog.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kernels) != launches {
		t.Errorf("run %d launched %d kernels, want %d", run, len(got.Kernels), launches)
	}
	want, err := ref.Run(g, in, params)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want["y"].F {
		if d := got.Outputs["y"].F[i] - w; math.Abs(d) > 1e-5*max(1, math.Abs(w)) {
			t.Fatalf("run %d: y[%d] = %v, want %v", run, i, got.Outputs["y"].F[i], w)
		}
	}
}

// A model small enough that its per-run kernels become one persistent kernel: a transposed
// convolution on a 5×5 input, BatchNorm, ReLU, a convolution. Its parameter-only kernels (the
// weight flip and channel swap, rsqrt(running_var+eps)) are bind-time, not stages of the
// persistent kernel: the first run launches them and the persistent kernel, the runs after it
// the persistent kernel alone, each equal to the reference.
func TestBindTimeKernelsOutsidePersistent(t *testing.T) {
	g, err := frontend.Build("convt_bn_conv", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 1, 4, 5, 5)
		y := nn.NewConvTranspose2d(b, "up", 4, 4, 3, nn.ConvTranspose2dOptions{Stride: 2, Padding: 1, OutputPadding: 1}).Forward(x)
		y = nn.NewBatchNorm2d(b, "bn", 4).Forward(y).Relu()
		b.Output("y", nn.NewConv2d(b, "conv", 4, 4, 3, nn.Conv2dOptions{Padding: 1}).Forward(y).Relu())
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bind, persistent := 0, 0
	for _, k := range res.Passes.Kernels.Kernels {
		if k.BindTime {
			bind++
		} else if k.Kind == passes.Persistent {
			persistent++
		}
	}
	if bind != 3 || persistent != 1 || len(res.Passes.Kernels.Kernels) != 4 {
		t.Fatalf("%d kernels, %d bind-time, %d persistent; want 4, 3, 1", len(res.Passes.Kernels.Kernels), bind, persistent)
	}
	prog, params := loadBN(t, g, res)
	defer prog.Close()
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	for run, launches := range []int{4, 1, 1} {
		runMatches(t, g, prog, params, run, launches)
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

// loadBN loads a compiled model with a BatchNorm "bn" of 4 channels on the simulator, and
// returns it with random parameters (a running_var of 0.5, 1, 2, 4), not yet bound.
func loadBN(t *testing.T, g *ir.Graph, res *compiler.Result) (*executor.Program, map[string]*tensor.Tensor) {
	t.Helper()
	prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]*tensor.Tensor{}
	for i, p := range g.Params() {
		params[p.Name] = tensor.RandomInput(p, uint64(i+1))
	}
	params["bn.running_var"] = tensor.FromFloats(ir.T(ir.F32, 4), []float64{0.5, 1, 2, 4})
	return prog, params
}

// A run of parameter-only contractions becomes one bind-time persistent kernel: launched on the
// first run only, its output read by the per-run kernels of every run, each equal to the
// reference.
func TestBindTimePersistentKernel(t *testing.T) {
	g, err := frontend.Build("chain", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 4, 8)
		p := b.Param("w2", frontend.T(ir.F32, 8, 8), frontend.Zeros())
		for _, name := range []string{"w3", "w4", "w5"} {
			p = p.Matmul(b.Param(name, frontend.T(ir.F32, 8, 8), frontend.Zeros())).Relu()
		}
		b.Output("y", x.Matmul(p))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ks := res.Passes.Kernels.Kernels
	if len(ks) != 2 || !ks[0].BindTime || ks[0].Kind != passes.Persistent {
		t.Fatalf("want a bind-time persistent kernel and a per-run one:\n%s", res.Passes.Kernels)
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
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	for run, launches := range []int{2, 1, 1} {
		runMatches(t, g, prog, params, run, launches)
	}
}
