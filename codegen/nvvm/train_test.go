package nvvm_test

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/examples/gpt"
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
		{"gpt_lm", 1, train.CrossEntropyLoss, train.NewAdamW(), "", false},
	} {
		t.Run(tc.example, func(t *testing.T) {
			if testing.Short() && tc.slow {
				t.Skip("-short: the larger train steps")
			}
			step, err := trainStep(tc.example, tc.batch, tc.loss, tc.opt, train.Options{AMP: tc.amp, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(step.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Kernels equal up to names share one entry: one of each is checked.
			var kernels []plan.Kernel
			seen := map[string]bool{}
			for _, kn := range res.Kernels.Kernels {
				k := nvvm.KernelOf(kn, tc.example+"_"+kn.Name)
				if key := plan.ShareKey(k); !seen[key] {
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

// trainStep builds the train step of the example named name as gcomp train does (train.NewModel
// with the loss named loss), or, for gpt_lm, of gptLM: a model that declares its own loss.
func trainStep(name string, batch int, loss string, opt train.Optimizer, o train.Options) (*train.StepGraph, error) {
	if name == "gpt_lm" {
		fwd, err := frontend.Build(name, gptLM, frontend.WithBatch(batch), frontend.WithTraining())
		if err != nil {
			return nil, err
		}
		return train.StepFromGraph(fwd, opt, o)
	}
	for _, ex := range examples.All() {
		if ex.Name != name {
			continue
		}
		fwd, err := frontend.Build(ex.Name, ex.Model, frontend.WithBatch(batch))
		if err != nil {
			return nil, err
		}
		fwdTrain, err := frontend.Build(ex.Name, ex.Model, frontend.WithBatch(batch), frontend.WithTraining())
		if err != nil {
			return nil, err
		}
		m, err := train.NewModel(fwd, fwdTrain, train.Loss{Name: loss})
		if err != nil {
			return nil, err
		}
		return m.Step(opt, o)
	}
	return nil, fmt.Errorf("no example %s", name)
}

// gptLM is examples/gpt's decoder at a small size trained as a language model: the mean over
// every token of the cross-entropy of its logits [B, T, V] over the vocabulary against the
// next tokens (nanoGPT's loss: logits.view(-1, V) against targets.view(-1)), declared as the
// output train.StepFromGraph differentiates.
func gptLM(b *frontend.Builder) {
	c := gpt.Config{NLayer: 1, NEmbd: 32, NHead: 2, VocabSize: 64, SeqLen: 8}
	batch := b.Batch(1)
	tokens := b.Input("tokens", frontend.I64, batch, c.SeqLen).WithRange(0, c.VocabSize)
	targets := b.Input("targets", frontend.I64, batch*c.SeqLen).WithRange(0, c.VocabSize)
	logits := gpt.NewGPT(b, c).Forward(tokens).Reshape(batch*c.SeqLen, c.VocabSize)
	b.Output(train.DefaultLoss, frontend.CrossEntropyLoss(logits, targets))
}
