package train

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// An AMP (bf16) train step of a one-head causal self-attention model over a symbolic batch in
// [1, 8] builds once, with attention's forward, dq and dk/dv on tensor cores at symbolic sizes
// (codegen/ptx's symattn_mma.go and symattn_bwd_mma.go), and runs at batches 1, 5 and 8 on the
// memchecked simulator within tolerance of the reference's step and the static build's.
func TestSymbolicStepAMPAttention(t *testing.T) {
	model := func(b *frontend.Builder) {
		n := b.Batch(8)
		x, y := b.Input("x", ir.F32, n, 1, 24, 16), b.Input("t", ir.F32, n, 1, 24, 16)
		proj := func(name string) *frontend.Tensor {
			return frontend.Linear(x, b.Param(name, ir.T(ir.F32, 16, 16), frontend.Uniform(-0.5, 0.5)), nil)
		}
		o := frontend.ScaledDotProductAttention(proj("wq"), proj("wk"), proj("wv"), true)
		b.Output(DefaultLoss, frontend.MSELoss(o, y))
	}
	fwd, err := frontend.Build("m", model, frontend.WithMaxBatch(8))
	if err != nil {
		t.Fatal(err)
	}
	s, err := StepFromGraph(fwd, &SGD{LR: 0.5}, Options{AMP: "bf16", LossScale: &LossScale{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attention's dq on tensor cores", "attention's dk and dv on tensor cores"} {
		if !strings.Contains(string(res.Artifact.PTX), want) {
			t.Fatalf("the step's PTX has no kernel of %s", want)
		}
	}
	checkSymbolicStep(t, s, []int64{1, 5, 8}, nil)
}
