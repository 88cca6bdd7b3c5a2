package train

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
)

// lseKernels counts a compiled step's kernels that compute the backward's attention_lse: beside
// their forward (one kernel writing o and the LSE), how many of those generate on tensor cores
// (mma.sync; under tf32 or not), and alone (a kernel recomputing the scores).
func lseKernels(t *testing.T, kg *passes.KernelGraph, tf32 bool) (beside, mma, alone int) {
	t.Helper()
	for _, k := range kg.Kernels {
		a, l := 0, 0
		for _, v := range k.Body.Values {
			a += btoi(v.Op == ops.AttentionOp)
			l += btoi(v.Op == ops.AttentionLSEOp)
		}
		switch {
		case l == 1 && a == 1:
			beside++
			entry, _, err := ptx.Generate(ptx.Kernel{Name: k.Name, Graph: k.Body}, ptx.Target{SM: 80, TF32: tf32})
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			if !strings.Contains(entry, "lg2.approx.f32") {
				t.Errorf("%s computes the LSE beside o but does not write it", k.Name)
			}
			mma += btoi(strings.Contains(entry, "mma.sync"))
		case l == 1:
			alone++
		}
	}
	return beside, mma, alone
}

// dkvOnTensorCores counts a step's kernels of dk and dv (two attention_grad ops) that generate on
// tensor cores.
func dkvOnTensorCores(t *testing.T, kg *passes.KernelGraph) int {
	t.Helper()
	n := 0
	for _, k := range kg.Kernels {
		grads := 0
		for _, v := range k.Body.Values {
			grads += btoi(v.Op == ops.AttentionGradOp)
		}
		if grads != 2 {
			continue
		}
		entry, _, err := ptx.Generate(ptx.Kernel{Name: k.Name, Graph: k.Body}, ptx.Target{SM: 80})
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		n += btoi(strings.Contains(entry, "mma.sync"))
	}
	return n
}

// TestAMPStepForwardWritesLSE: gpt's AMP train steps (bf16, f16: attention on the tensor-core
// template, head dim 32, T = 64) have no kernel of the backward's attention_lse of their own:
// each layer's forward kernel writes o and the rows' LSE, on tensor cores, so the scores are not
// computed an extra time. The f32 step (CUDA cores) did so already. The steps' cost reports are
// docs/perf.md's (go test ./train -run TestAMPStepForwardWritesLSE -v).
func TestAMPStepForwardWritesLSE(t *testing.T) {
	fwd, err := frontend.Build("gpt", gpt.Model)
	if err != nil {
		t.Fatal(err)
	}
	g, err := WithLoss(fwd, Loss{Name: MSELoss}, frontend.ReductionMean)
	if err != nil {
		t.Fatal(err)
	}
	for _, amp := range []string{"bf16", "f16", ""} {
		t.Run("amp_"+amp, func(t *testing.T) {
			s, err := StepFromGraph(g, NewAdam(), Options{AMP: amp})
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(s.Graph, passes.Options{ParamsChangeEveryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			beside, mma, alone := lseKernels(t, res.Kernels, false)
			wantMMA := gpt.NLayer * btoi(amp != "")
			if beside != gpt.NLayer || mma != wantMMA || alone != 0 {
				t.Errorf("%d forward kernels writing the LSE (%d on tensor cores), %d LSE kernels of their own; want %d (%d) and 0",
					beside, mma, alone, gpt.NLayer, wantMMA)
			}
			st := res.Stats
			t.Logf("gpt step, AMP %q: %d kernels, %d DRAM bytes, arena %d bytes, %.1f µs modeled", amp, st.Kernels, st.DRAMBytes, st.ArenaBytes, st.ModeledTimeUS)
		})
	}
}

// attentionMMAModel is attentionModel with heads of 16 columns, which under AMP take the
// tensor-core template (16 query rows, head dim a multiple of 16).
func attentionMMAModel(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 3)
	y := b.Input("y", ir.F32, 16, 1)
	linear := func(x *frontend.Tensor, name string, out, in int) *frontend.Tensor {
		return frontend.Linear(x, b.Param(name, ir.T(ir.F32, out, in), frontend.Uniform(-0.5, 0.5)), nil)
	}
	h := linear(x, "in", 32, 3)
	heads := func(name string) *frontend.Tensor {
		return linear(h, name, 32, 32).Reshape(1, 16, 2, 16).Transpose(1, 2)
	}
	o := frontend.ScaledDotProductAttention(heads("q"), heads("k"), heads("v"), true)
	b.Output("loss", frontend.MSELoss(linear(o.Transpose(1, 2).Reshape(16, 32), "out", 1, 32), y))
}

// TestAMPStepLSEOnSimulator: an AMP step (bf16, f16) or an f32 step under tf32 whose forward
// attention kernel writes the LSE on tensor cores and whose backward reads it (dk and dv on
// tensor cores under AMP, dq on CUDA cores; all on CUDA cores in f32 under tf32)
// computes, on the PTX simulator (memcheck and race checks on), every new parameter within the
// error bounds of the reference interpreter's step (runtime/check, as `gcomp check`; tf32's
// bounds for the tf32 step, whose backward's scores are f32 where its LSE's are tf32).
func TestAMPStepLSEOnSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps")
	}
	fwd, err := frontend.Build("attn", attentionMMAModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, amp := range []string{"bf16", "f16", "tf32"} {
		t.Run(amp, func(t *testing.T) {
			o, copt := Options{AMP: amp, LossScale: &LossScale{Disabled: true}}, compiler.Options{}
			if amp == "tf32" {
				o.AMP, copt.Target = "", ptx.Target{SM: 80, TF32: true}
			}
			s, err := StepFromGraph(fwd, NewSGD(0.5), o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(s.Graph, StepCompilerOptions(copt))
			if err != nil {
				t.Fatal(err)
			}
			if beside, mma, alone := lseKernels(t, res.Passes.Kernels, copt.Target.TF32); beside != 1 || mma != 1 || alone != 0 {
				t.Fatalf("%d forward kernels writing the LSE (%d on tensor cores), %d LSE kernels; want 1 (1) and 0", beside, mma, alone)
			}
			if n := dkvOnTensorCores(t, res.Passes.Kernels); n != btoi(amp != "tf32") {
				t.Errorf("%d dk/dv kernels on tensor cores, want %d", n, btoi(amp != "tf32"))
			}
			params, err := InitParams(s.Graph, 3)
			if err != nil {
				t.Fatal(err)
			}
			inputs := s.InitState()
			for _, v := range fwd.Inputs() {
				inputs[v.Name] = tensor.RandomInput(v, 11)
			}
			rep, err := check.Run(res.Artifact, inputs, params)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Pass() {
				var sb strings.Builder
				rep.WriteTable(&sb)
				t.Errorf("the simulated step is outside the bounds:\n%s", sb.String())
			}
		})
	}
}
