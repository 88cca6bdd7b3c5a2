package check_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// simOutputs runs a on the simulator and returns its outputs.
func simOutputs(t *testing.T, a *artifact.Artifact, inputs, params map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	dev := simdev.New(simdev.Options{})
	defer dev.Close()
	prog, err := executor.Load(dev, a)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	res, err := prog.Run(inputs)
	if err != nil {
		t.Fatal(err)
	}
	return res.Outputs
}

// Under autocast the check can fail: a linear layer in bf16 or f16 and the layer norm after it
// (a transformer's sublayer without its attention) compiled for the simulator pass with every
// element's bound finite, and the simulator's output with one element moved by a few units of
// the low dtype at the output's scale (1, after the norm) is a mismatch, and so is the output of
// kernels that round to the low dtype toward zero instead of to nearest. Before the contraction's
// bound charged f32 accumulation rather than accumulation in the low dtype, every element's
// bound was +∞ there and anything passed.
func TestAMPCheckCanFail(t *testing.T) {
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 8, 64)
		b.Output("y", nn.NewLayerNorm(b, "norm", 64).Forward(nn.NewLinear(b, "fc", 64, 64).Forward(x)))
	}
	for _, dt := range []ir.DType{ir.BF16, ir.F16} {
		g, err := frontend.Build("linear_norm", model)
		if err != nil {
			t.Fatal(err)
		}
		paramcheck.Randomize(g, 0.1) // the layers zero their biases: drawn nonzero, a dropped add fails
		res, err := compiler.Compile(g, compiler.Options{AMP: dt})
		if err != nil {
			t.Fatal(err)
		}
		inputs, params := values(t, g, 1)
		rep, err := check.Run(res.Artifact, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		if o := rep.Outputs[0]; !o.Pass() || o.Free != 0 || !strings.Contains(res.Artifact.Plan.AMP, dt.String()) {
			t.Fatalf("%s: the compiled model: %+v, plan amp %q", dt, o, res.Artifact.Plan.AMP)
		}
		src, err := res.Artifact.Plan.SourceGraph()
		if err != nil {
			t.Fatal(err)
		}
		bounds, err := tolerance.Bounds(src, inputs, params, false)
		if err != nil {
			t.Fatal(err)
		}
		want := bounds["y"]
		got := simOutputs(t, res.Artifact, inputs, params)["y"]
		if o := check.CompareBound("y", got, want, dt, false); !o.Pass() {
			t.Fatalf("%s: the simulator's output fails: %s", dt, o.First)
		}
		// Kernels that round to dt toward zero instead of to nearest: off by less than a unit
		// of dt in each rounded element.
		rn := "cvt.rn." + dt.String() + ".f32"
		rz := &artifact.Artifact{PTX: []byte(strings.ReplaceAll(string(res.Artifact.PTX), rn, "cvt.rz."+dt.String()+".f32")), Plan: res.Artifact.Plan}
		if !strings.Contains(string(res.Artifact.PTX), rn) {
			t.Fatalf("%s: the module has no %s", dt, rn)
		}
		if rep, err = check.Run(rz, inputs, params); err != nil || rep.Pass() {
			t.Errorf("%s: rounding toward zero passes: %v %+v", dt, err, rep.Outputs)
		}
		unit := map[ir.DType]float64{ir.BF16: 0x1p-7, ir.F16: 0x1p-10}[dt]
		for _, i := range []int{0, 100, got.Len() - 1} {
			bad := tensor.FromFloats(got.Type, nil)
			copy(bad.F, got.F)
			bad.F[i] += 4 * unit * math.Copysign(1, got.F[i])
			if o := check.CompareBound("y", bad, want, dt, false); o.Bad != 1 {
				t.Errorf("%s: y[%d] moved by four units of %s from %g (bound %g): %d elements bad, want 1", dt, i, dt, got.F[i], want.At(i), o.Bad)
			}
		}
	}
}
