package train_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// A loaded step keeps its weights and state on the device: a run takes only the batch, and a
// step's update is what the next run starts from. Missing values are an error that frees the
// device memory the program took.
func TestStepLoad(t *testing.T) {
	step, err := train.Step("linear", func(b *frontend.Builder) {
		x, labels := b.Input("x", ir.F32, 4, 8), b.Input("labels", ir.I64, 4)
		b.Output("loss", frontend.CrossEntropyLoss(nn.NewLinear(b, "fc", 8, 3).Forward(x), labels))
	}, train.NewSGD(0.5), train.Options{})
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
	dev := simdev.New(simdev.Options{})
	free, _, _ := dev.MemInfo()
	if _, err := step.Load(dev, res.Artifact, map[string]*tensor.Tensor{}, step.InitState()); err == nil || !strings.Contains(err.Error(), "no value for param") {
		t.Errorf("Load without weights: %v", err)
	}
	if after, _, _ := dev.MemInfo(); after != free {
		t.Errorf("a failed Load kept %d bytes of device memory", free-after)
	}
	prog, err := step.Load(dev, res.Artifact, params, step.InitState())
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	batch := map[string]*tensor.Tensor{}
	for _, name := range step.Batch {
		batch[name] = tensor.RandomInput(step.Graph.Lookup(name), 3)
	}
	ref := train.NewRefTrainer(step, params)
	for i := range 3 {
		r, err := prog.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Outputs[step.Loss].F[0], want[step.Loss].F[0]; got-want > 1e-5 || want-got > 1e-5 {
			t.Errorf("step %d: loss %g, the reference's %g", i, got, want)
		}
	}
}
