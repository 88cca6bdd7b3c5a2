package nvvm_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/train"
)

// The compiled train steps (forward in training mode, loss, backward and optimizer update, as
// gcomp train builds them) of the examples go through the differential harness kernel by
// kernel: ptxas for sm_80 and sm_90 without spills, the simulator with memcheck, racecheck and
// synccheck, the reference within the tolerance rule, and codegen/ptx bit for bit where exact.
// The batches are small, for the simulator's sake; the producer must take every kernel.
func TestTrainStepKernels(t *testing.T) {
	for _, tc := range []struct {
		example string
		batch   int
		loss    string
		opt     train.Optimizer
		amp     string
		slow    bool
	}{
		{"mlp", 2, train.MSELoss, &train.SGD{LR: 0.01, Momentum: 0.9}, "", false},
		{"fashion_mlp", 2, train.CrossEntropyLoss, train.NewAdam(), "bf16", false},
		{"cnn", 1, train.CrossEntropyLoss, train.NewAdam(), "", true},
		{"fashion_bncnn", 1, train.CrossEntropyLoss, train.NewAdam(), "", true},
		{"transformer", 1, train.MSELoss, train.NewAdamW(), "", true},
	} {
		t.Run(tc.example, func(t *testing.T) {
			if testing.Short() && tc.slow {
				t.Skip("-short: the larger train steps")
			}
			var ex *examples.Example
			for _, e := range examples.All() {
				if e.Name == tc.example {
					ex = &e
				}
			}
			if ex == nil {
				t.Fatalf("no example %s", tc.example)
			}
			fwd, err := frontend.Build(ex.Name, ex.Model, frontend.WithBatch(tc.batch))
			if err != nil {
				t.Fatal(err)
			}
			fwdTrain, err := frontend.Build(ex.Name, ex.Model, frontend.WithBatch(tc.batch), frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			m, err := train.NewModel(fwd, fwdTrain, train.Loss{Name: tc.loss})
			if err != nil {
				t.Fatal(err)
			}
			step, err := m.Step(tc.opt, train.Options{AMP: tc.amp, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(step.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Kernels equal up to names share one entry: one of each is checked.
			var kernels []ptx.Kernel
			seen := map[string]bool{}
			for _, kn := range res.Kernels.Kernels {
				k := nvvm.KernelOf(kn, ex.Name+"_"+kn.Name)
				if key := ptx.ShareKey(k); !seen[key] {
					seen[key] = true
					kernels = append(kernels, k)
				}
			}
			if refused := nvvm.CheckKernels(t, kernels, 5); len(refused) > 0 {
				t.Errorf("%d of %d kernels refused: %v", len(refused), len(kernels), refused)
			}
			t.Logf("%d kernels, %d distinct", len(res.Kernels.Kernels), len(kernels))
		})
	}
}
