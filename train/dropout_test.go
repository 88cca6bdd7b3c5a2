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

// In training mode BatchNorm's running statistics and num_batches_tracked are step state fed
// back through their parameters, not trained: after k steps num_batches_tracked is k, the
// running mean moved toward the batch's, and the simulator's buffers equal the reference's.
func TestBatchNormTrainingStep(t *testing.T) {
	fwd, err := frontend.Build("bn", func(b *frontend.Builder) {
		x, labels := b.Input("x", ir.F32, 4, 2, 3, 3), b.Input("labels", ir.I64, 4)
		// No convolution bias: BatchNorm cancels it, so its gradient is rounding noise, which
		// Adam turns into ±lr steps that differ between any two summation orders.
		h := nn.NewBatchNorm2d(b, "bn", 2).Forward(nn.NewConv2d(b, "conv", 2, 2, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}).Forward(x))
		b.Output("loss", frontend.CrossEntropyLoss(nn.NewLinear(b, "fc", 18, 3).Forward(h.Relu().Flatten(1, -1)), labels))
	}, frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	step, err := train.StepFromGraph(fwd, train.NewAdam(), train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range step.Params {
		if p == "bn.running_mean" || p == "bn.running_var" || p == "bn.num_batches_tracked" {
			t.Errorf("buffer %s is trained", p)
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
	const steps = 3
	for i := range steps {
		r, err := prog.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Outputs[step.Loss].F[0], want[step.Loss].F[0]; math.Abs(got-want) > 1e-5 {
			t.Errorf("step %d: loss %g, the reference's %g", i, got, want)
		}
		for _, name := range []string{"conv.weight", "bn.weight", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"} {
			g, err := prog.Read(name) // the parameter's buffer, which the step's update replaced
			if err != nil {
				t.Fatal(err)
			}
			w := ref.Params[name]
			for j := range w.Len() {
				if math.Abs(g.At(j)-w.At(j)) > 1e-5*(1+math.Abs(w.At(j))) {
					t.Errorf("step %d: %s[%d] = %v on the simulator, %v on the reference", i, name, j, g.At(j), w.At(j))
				}
			}
		}
	}
	if n := ref.Params["bn.num_batches_tracked"].I[0]; n != steps {
		t.Errorf("num_batches_tracked %d after %d steps", n, steps)
	}
	if m := ref.Params["bn.running_mean"]; m.F[0] == 0 && m.F[1] == 0 {
		t.Errorf("the running mean did not move: %v", m.F)
	}
}
