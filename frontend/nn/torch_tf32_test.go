package nn_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// tf32Cases are the layers with a contraction: --tf32 runs their f32 matmuls and convolutions
// (forward and backward) on tf32 tensor cores where the kernel's template allows (the others stay
// exact f32, with a plan note where a tiled template fell back), as PyTorch on CUDA does with
// torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32. true: some kernel of the case's
// step must use tf32 tensor cores.
var tf32Cases = map[string]bool{"conv1d": false, "conv1d_groups_dil": false, "conv2d_rect": true, "conv2d_same": false,
	"conv_transpose2d": false, "conv_transpose2d_groups": false, "transformer_encoder": true}

// TestTF32AgainstPyTorch compiles each case with Target.TF32 and holds what the simulator
// computes, forward and backward, to PyTorch's float64 values with tf32's tolerance (operands
// rounded to a 10-bit mantissa: relative 5e-3, the floor 5e-3·RMS), and to the reference
// interpreter with check.Run's error bounds for tf32.
func TestTF32AgainstPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the simulator runs every case")
	}
	for name, mma := range tf32Cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "torch", name)
			c := loadTorchCase(t, dir, torchCases[name])
			g, err := autodiff.Grad(c.g, "loss", c.wrt)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 80, TF32: true}})
			if err != nil {
				t.Fatal(err)
			}
			if mma && !strings.Contains(string(res.Artifact.PTX), ".tf32.tf32.f32") {
				t.Errorf("no tf32 mma in the compiled step; notes %q", res.Artifact.Plan.Notes())
			}
			got, err := simProgram(t, res.Artifact, c.params).Run(c.inputs)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"y": "y", autodiff.GradPrefix + "x": "gx"}
			for _, p := range c.wrt[1:] {
				want[autodiff.GradPrefix+p] = "gp." + strings.TrimPrefix(p, ".")
			}
			for out, file := range want {
				y := got.Outputs[out]
				o := check.CompareIn(out, y, tensor.FromFloats(y.Type, reftest.Floats(readNPY(t, dir, file))), ir.F32, true)
				if !o.Pass() {
					t.Errorf("%s: %d elements outside tf32's tolerance (max abs %g, max rel %g); first %s", out, o.Bad, o.MaxAbs, o.MaxRel, o.First)
				}
			}
			checkCompiled(t, g, c, compiler.Options{Target: ptx.Target{SM: 80, TF32: true}})
		})
	}
}

// simProgram loads a on a fresh simulated device with params bound; both are closed when the
// test ends.
func simProgram(t *testing.T, a *artifact.Artifact, params map[string]*tensor.Tensor) *executor.Program {
	t.Helper()
	dev := simdev.New(simdev.Options{})
	t.Cleanup(func() { dev.Close() })
	prog, err := executor.Load(dev, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	return prog
}
