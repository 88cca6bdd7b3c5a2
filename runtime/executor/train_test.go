package executor_test

import (
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/sim"
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
// device between steps, and after every step its loss, weights and every state input (optimizer
// slots, step count, loss scale and growth tracker) match the reference interpreter's run of
// the same step graph.
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
		// The default run, then the global race check with the blocks in reverse and in a seeded
		// random order.
		for _, dev := range []simdev.Options{{}, {RaceGlobal: true, Order: sim.Reverse}, {RaceGlobal: true, Order: sim.RandomOrder, Seed: 1}} {
			name := tc.name
			if dev.RaceGlobal {
				name += ", race check, " + dev.Order.String()
			}
			t.Run(name, func(t *testing.T) {
				c := newCompiledStepOn(t, dev, classifier, tc.opt, tc.amp)
				for i := range 4 {
					batch := map[string]*tensor.Tensor{}
					for _, name := range c.step.Batch {
						batch[name] = tensor.RandomInput(c.step.Graph.Lookup(name), uint64(10+i))
					}
					c.run(t, i, batch)
				}
			})
		}
	}
}

// compiledStep is a train step compiled and loaded on the simulator beside the reference
// interpreter's trainer, both from the weights of seed 1.
type compiledStep struct {
	step *train.StepGraph
	ref  *train.RefTrainer
	prog *executor.Program
}

func newCompiledStep(t *testing.T, model func(*frontend.Builder), opt train.Optimizer, amp string) *compiledStep {
	t.Helper()
	return newCompiledStepOn(t, simdev.Options{}, model, opt, amp)
}

// newCompiledStepOn is newCompiledStep on a simulator with options dev.
func newCompiledStepOn(t *testing.T, dev simdev.Options, model func(*frontend.Builder), opt train.Optimizer, amp string) *compiledStep {
	t.Helper()
	step, err := train.Step("classifier", model, opt, train.Options{AMP: amp})
	if err != nil {
		t.Fatal(err)
	}
	prog, params := loadStep(t, simdev.New(dev), step)
	return &compiledStep{step, train.NewRefTrainer(step, params), prog}
}

// loadStep compiles step and loads it on dev (closed when the test ends) with the weights of
// seed 1 and fresh optimizer state.
func loadStep(t *testing.T, dev executor.Device, step *train.StepGraph) (*executor.Program, map[string]*tensor.Tensor) {
	t.Helper()
	res, err := compiler.Compile(step.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	params, err := train.InitParams(step.Graph, 1)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := step.Load(dev, res.Artifact, params, step.InitState())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog, params
}

// run runs step i on both and compares the loss, found_inf, every trained parameter and every
// state input, and returns the reference's outputs.
func (c *compiledStep) run(t *testing.T, i int, batch map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	want, err := c.ref.Run(batch)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.prog.Run(batch)
	if err != nil {
		t.Fatalf("step %d: %v", i, err)
	}
	// Only the outputs nothing feeds back reach the host: the loss, and amp.found_inf with loss
	// scaling.
	if n := len(c.step.Graph.Outputs) - len(c.step.StateBindings); len(got.Outputs) != n {
		t.Errorf("step %d returned %d outputs, want %d; the fed-back ones stay on the device", i, len(got.Outputs), n)
	}
	for _, name := range []string{"loss", train.FoundInfName} {
		if w, ok := want[name]; ok {
			if o := check.Compare(name, got.Outputs[name], w, false); !o.Pass() {
				t.Errorf("step %d: %s", i, o.First)
			}
		}
	}
	for _, name := range c.step.Params {
		c.compare(t, i, name, c.ref.Params[name])
	}
	for _, v := range c.step.State {
		c.compare(t, i, v.Name, c.ref.State[v.Name])
	}
	return want
}

func (c *compiledStep) compare(t *testing.T, i int, name string, want *tensor.Tensor) {
	t.Helper()
	if o := check.Compare(name, c.read(t, name), want, false); !o.Pass() {
		t.Errorf("step %d: %s: %d elements differ, first %s", i, name, o.Bad, o.First)
	}
}

// read copies a parameter or state input from the device.
func (c *compiledStep) read(t *testing.T, name string) *tensor.Tensor {
	t.Helper()
	v, err := c.prog.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An f16 step whose gradients overflow is skipped on the device as GradScaler skips it: the
// parameters and slots keep their values bit for bit, the scale halves and the growth tracker
// restarts; the next finite step applies with the halved scale.
func TestCompiledStepSkipsOverflow(t *testing.T) {
	momentum := train.NewSGD(0.1)
	momentum.Momentum = 0.9
	c := newCompiledStep(t, classifier, momentum, "f16")
	batch := func(seed uint64, scale float64) map[string]*tensor.Tensor {
		b := map[string]*tensor.Tensor{}
		for _, name := range c.step.Batch {
			b[name] = tensor.RandomInput(c.step.Graph.Lookup(name), seed)
		}
		for i := range b["x"].F {
			b["x"].F[i] *= scale // 1e6 is beyond f16's 65504: the autocast operands round to inf
		}
		return b
	}
	c.run(t, 0, batch(10, 1))
	kept := append([]string{}, c.step.Params...)
	for _, name := range c.step.Params {
		kept = append(kept, train.OptPrefix+name+".momentum_buffer")
	}
	before := map[string]*tensor.Tensor{}
	for _, name := range kept {
		before[name] = c.read(t, name)
	}
	scale := c.ref.State[train.ScaleName].F[0]
	want := c.run(t, 1, batch(11, 1e6))
	if want[train.FoundInfName].F[0] != 1 {
		t.Fatalf("the reference step with inputs of 1e6 found no overflow")
	}
	for _, name := range kept {
		if !slices.Equal(c.read(t, name).F, before[name].F) {
			t.Errorf("%s changed in a skipped step", name)
		}
	}
	for name, want := range map[string]float64{train.ScaleName: scale / 2, train.TrackerName: 0} {
		if v := c.read(t, name).At(0); v != want {
			t.Errorf("%s after the skipped step = %v, want %v", name, v, want)
		}
	}
	c.run(t, 2, batch(12, 1))
}

// The MLP of examples/fashion at its real size, 784-256-10 with batch 64, trains on the
// simulator as on the reference interpreter for 3 SGD steps with momentum, under check.Compare's
// f32 rule: relative 1e-5, with a floor of 1e-5 of the tensor's RMS for elements near zero,
// where cancellation leaves only rounding. The kernels accumulate the contractions in f32 (K =
// 784 forward, 64 for the weight gradients) where the reference rounds exact sums once, so
// gradients, and the momentum buffers that sum them, differ by about √K·2⁻²⁴ ≈ 2e-6 relative;
// each update moves a parameter by lr·buf, about 1% of its size, so parameters differ far less.
// Measured: the worst element uses 22% of its bound (a momentum buffer), parameters 2%. SGD keeps
// the error proportional to the gradient's; Adam's first step, lr·g/|g|, would turn a
// rounding-level gradient into a whole ±lr step, which no tolerance tied to the gradient covers.
func TestCompiledStepRealSizeMLP(t *testing.T) {
	if testing.Short() {
		t.Skip("a 784-256-10 MLP at batch 64 on the simulator")
	}
	mlp := func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 64, 784)
		labels := b.Input("labels", ir.I64, 64).WithRange(0, 10)
		fc1, fc2 := nn.NewLinear(b, "fc1", 784, 256), nn.NewLinear(b, "fc2", 256, 10)
		b.Output("loss", frontend.CrossEntropyLoss(fc2.Forward(fc1.Forward(x).Relu()), labels))
	}
	momentum := train.NewSGD(0.01)
	momentum.Momentum = 0.9
	c := newCompiledStep(t, mlp, momentum, "")
	for i := range 3 {
		batch := map[string]*tensor.Tensor{}
		for _, name := range c.step.Batch {
			batch[name] = tensor.RandomInput(c.step.Graph.Lookup(name), uint64(20+i))
		}
		c.run(t, i, batch)
	}
}
