package nn_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
	"github.com/gcomp/gcomp/train"
)

// ampDir holds PyTorch's values of layers under autocast (scripts/torch_layers_reference.py
// --amp): CASE.amp_DT.safetensors, the f32 layer whose contractions run in DT as CUDA's
// torch.autocast runs them, and its plain f32 values (f32.*).
var ampDir = filepath.Join("testdata", "torch_amp")

// ampLow are the cases with a contraction, which autocast runs in the low dtype; the others
// (norms) stay f32 throughout.
var ampLow = map[string]bool{"conv1d": true, "conv2d_rect": true, "conv_transpose2d": true, "transformer_encoder": true}

// TestAMPAgainstPyTorch runs each layer's training step with train.Options.AMP (`gcomp train
// --amp`) and checks its output and parameter gradients against PyTorch's autocast: the
// contractions in the low dtype (the output then differs from plain f32 beyond f32's tolerance),
// norms, softmax and the rest in f32 (a layer without a contraction equals plain f32 within it).
// The step compiled for the simulator is held to the reference interpreter.
func TestAMPAgainstPyTorch(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(ampDir, "*.safetensors"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in %s (%v)", ampDir, err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".safetensors")
		name, amp, _ := strings.Cut(base, ".amp_")
		dt := oddDTypes[amp]
		t.Run(base, func(t *testing.T) {
			if dt != ir.F16 && dt != ir.BF16 || torchCases[name] == nil {
				t.Fatalf("%s: want CASE.amp_f16 or CASE.amp_bf16 of a case of torchCases", f)
			}
			arrays, _, err := tensorio.ReadSafetensorsFile(f)
			if err != nil {
				t.Fatal(err)
			}
			vals := map[string]*tensor.Tensor{}
			n := 0
			for k, a := range arrays {
				if vals[k], err = tensor.FromArray(a); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(k, "p.") {
					n++
				}
			}
			c := torchGraph(t, name, torchCases[name], ir.F32, vals["x"], func(k string) *tensor.Tensor { return vals[k] }, n)
			trained := slices.DeleteFunc(slices.Clone(c.wrt), func(s string) bool { return s == "x" })
			// PyTorch 1.13 has no scaled_dot_product_attention: its autocast rounds the scores and
			// probabilities to the low dtype, as the step that differentiates the decomposition
			// does. The default step's fused attention (softmax in f32) is held to the reference
			// interpreter by the error bounds below.
			opts := train.Options{AMP: amp, Params: trained, LossScale: &train.LossScale{Disabled: true}, UnfusedAttention: true}
			step, err := train.StepFromGraph(c.g, train.NewSGD(1), opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.UnfusedAttention = false
			fused, err := train.StepFromGraph(c.g, train.NewSGD(1), opts)
			if err != nil {
				t.Fatal(err)
			}
			low := slices.ContainsFunc(step.Graph.Values, func(v *ir.Value) bool { return v.Type.DType == dt })
			if low != ampLow[name] {
				t.Errorf("the step computes in %s: %v, want %v", dt, low, ampLow[name])
			}
			inputs := step.InitState()
			for k, v := range c.inputs {
				inputs[k] = v
			}
			got, err := ref.Run(step.Graph, inputs, c.params)
			if err != nil {
				t.Fatal(err)
			}
			// SGD with learning rate 1: the gradient is p − new.p (f32 rounds it by 2⁻²⁴·|p|).
			grad := func(p string) *tensor.Tensor {
				old, upd := c.params[p], got["new."+p]
				g := tensor.New(old.Type)
				for i := range g.F {
					g.F[i] = old.F[i] - upd.F[i]
				}
				return g
			}
			compareTorch(t, "y", got["y"], tolerance.Bound{}, vals["y"], dt)
			for _, p := range trained {
				compareTorch(t, "d loss/d "+p, grad(p), tolerance.Bound{}, vals["gp."+strings.TrimPrefix(p, ".")], dt)
			}
			// Against plain f32: within f32's tolerance exactly when nothing ran in dt.
			o := check.CompareIn("y", got["y"], vals["f32.y"], ir.F32, false)
			if o.Pass() == ampLow[name] {
				t.Errorf("y against plain f32 within f32's tolerance: %v (max rel %g), want %v", o.Pass(), o.MaxRel, !ampLow[name])
			}
			if testing.Short() {
				return // -short: the simulator runs every case
			}
			checkCompiled(t, fused.Graph, torchCase{inputs: inputs, params: c.params}, compiler.Options{})
		})
	}
}
