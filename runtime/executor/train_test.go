package executor_test

import (
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

func classifier(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 8, 16)
	labels := b.Input("labels", ir.I64, 8)
	fc1, fc2 := nn.NewLinear(b, "fc1", 16, 32), nn.NewLinear(b, "fc2", 32, 4)
	logits := fc2.Forward(fc1.Forward(x).Relu())
	b.Output("loss", frontend.CrossEntropyLoss(logits, labels))
}

// A compiled train step runs on the simulator with its weights and optimizer state kept on the
// device between steps, and after every step its loss and weights match the reference
// interpreter's run of the same step graph.
func TestCompiledTrainSteps(t *testing.T) {
	adam := train.NewAdam()
	adam.LR = 1e-2
	momentum := train.NewSGD(0.1)
	momentum.Momentum = 0.9
	for _, tc := range []struct {
		name string
		opt  train.Optimizer
		amp  string
	}{
		{"sgd momentum", momentum, ""},
		{"adam", adam, ""},
		{"adam bf16", adam, "bf16"},
		{"sgd f16 loss scaling", train.NewSGD(0.1), "f16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, err := train.Step("classifier", classifier, tc.opt, train.Options{AMP: tc.amp})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(step.Graph, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			params, err := train.InitParams(step.Graph, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref := train.NewRefTrainer(step, params)
			prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			if err := prog.SetParams(params); err != nil {
				t.Fatal(err)
			}
			if err := prog.Feedback(step.StateBindings); err != nil {
				t.Fatal(err)
			}
			if err := prog.SetState(step.InitState()); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				batch := map[string]*tensor.Tensor{}
				for _, name := range step.Batch {
					batch[name] = tensor.RandomInput(step.Graph.Lookup(name), uint64(10+i))
				}
				want, err := ref.Run(batch)
				if err != nil {
					t.Fatal(err)
				}
				got, err := prog.Run(batch)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if o := check.Compare("loss", got.Outputs["loss"], want["loss"], false); !o.Pass() {
					t.Errorf("step %d: %s", i, o.First)
				}
				// Only the outputs nothing feeds back reach the host: the loss, and amp.found_inf
				// with loss scaling.
				if n := len(step.Graph.Outputs) - len(step.StateBindings); len(got.Outputs) != n {
					t.Errorf("step %d returned %d outputs, want %d; the fed-back ones stay on the device", i, len(got.Outputs), n)
				}
				if f, ok := want[train.FoundInfName]; ok {
					if o := check.Compare(train.FoundInfName, got.Outputs[train.FoundInfName], f, false); !o.Pass() {
						t.Errorf("step %d: %s", i, o.First)
					}
				}
				for _, name := range step.Params {
					w, err := prog.Read(name)
					if err != nil {
						t.Fatal(err)
					}
					if o := check.Compare(name, w, ref.Params[name], false); !o.Pass() {
						t.Errorf("step %d: %s: %d elements differ, first %s", i, name, o.Bad, o.First)
					}
				}
			}
		})
	}
}
