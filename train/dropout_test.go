package train_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// A model built in training mode drops: its random key is step state that starts from the seed
// and advances every step, so the masks differ from step to step and from seed to seed, and the
// compiled step on the simulator matches the reference step for step (masks included: the
// dropped activations are exact zeros on both).
func TestDropoutTrainingStep(t *testing.T) {
	model := func(b *frontend.Builder) {
		x, labels := b.Input("x", ir.F32, 8, 16), b.Input("labels", ir.I64, 8)
		h := nn.Dropout{P: 0.5}.Forward(nn.NewLinear(b, "fc1", 16, 32).Forward(x).Relu())
		b.Output("hidden", h)
		b.Output("loss", frontend.CrossEntropyLoss(nn.NewLinear(b, "fc2", 32, 3).Forward(h), labels))
	}
	fwd, err := frontend.Build("mlp", model, frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	eval, err := frontend.Build("mlp", model)
	if err != nil {
		t.Fatal(err)
	}
	if eval.Lookup(frontend.RandomKeyName) != nil || fwd.Lookup(frontend.RandomKeyName) == nil {
		t.Fatalf("the random key belongs to the training graph only")
	}
	step, err := train.StepFromGraph(fwd, train.NewSGD(0.1), train.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := step.InitState()[frontend.RandomKeyName].I[0]; got != 3<<32 {
		t.Errorf("initial key %#x, want 3<<32", got)
	}
	for _, b := range step.Batch {
		if b == frontend.RandomKeyName {
			t.Fatalf("the key is fed as a batch input")
		}
	}
	res, err := compiler.Compile(step.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	params, err := train.InitParams(step.Graph, 1)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := step.Load(simdev.New(simdev.Options{}), res.Artifact, params, step.InitState())
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	batch := map[string]*tensor.Tensor{}
	for _, name := range step.Batch {
		batch[name] = tensor.RandomInput(step.Graph.Lookup(name), 3)
	}
	ref := train.NewRefTrainer(step, params)
	var masks []string
	for i := range 3 {
		r, err := prog.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		mask := ""
		for j, w := range want["hidden"].F {
			g := r.Outputs["hidden"].F[j]
			if (g == 0) != (w == 0) || math.Abs(g-w) > 1e-5*(1+math.Abs(w)) {
				t.Fatalf("step %d: hidden[%d] = %v on the simulator, %v on the reference", i, j, g, w)
			}
			mask += map[bool]string{true: "0", false: "1"}[w == 0]
		}
		if got, want := r.Outputs[step.Loss].F[0], want[step.Loss].F[0]; math.Abs(got-want) > 1e-5 {
			t.Errorf("step %d: loss %g, the reference's %g", i, got, want)
		}
		masks = append(masks, mask)
	}
	if masks[0] == masks[1] || masks[1] == masks[2] {
		t.Errorf("the masks repeat from step to step")
	}
}
