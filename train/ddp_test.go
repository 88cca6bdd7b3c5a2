package train

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// mixtureAt is mixtureModel at batch n.
func mixtureAt(n int) func(*frontend.Builder) {
	return func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, n, 2)
		fc1, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(fc1.Forward(x).Relu()))
	}
}

// mixtureRows is the first n rows of testdata/mixture.
func mixtureRows(t *testing.T, n int) data.Dataset {
	t.Helper()
	tr, _, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	return data.Head(tr, n)
}

// refDevices is n ranks on the reference interpreter.
func refDevices(n int) []executor.Device { return make([]executor.Device, n) }

// compareParams reports where got's parameters and state differ from want's beyond the
// comparison tolerance of f32.
func compareParams(t *testing.T, got, want *FitResult) {
	t.Helper()
	compareParamsIn(t, got, want, ir.F32)
}

// compareParamsIn is compareParams with the tolerance of values computed in prec.
func compareParamsIn(t *testing.T, got, want *FitResult, prec ir.DType) {
	t.Helper()
	for name, w := range want.Params {
		if o := check.CompareIn(name, got.Params[name], w, prec, false); !o.Pass() {
			t.Errorf("%s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
	for name, w := range want.State {
		if o := check.CompareIn(name, got.State[name], w, prec, false); !o.Pass() {
			t.Errorf("state %s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
}

// The contract of data-parallel training: N ranks at batch B/N train the parameters (and
// optimizer state) one device trains at batch B, within the f32 tolerance, for SGD with momentum
// and Adam (and within bf16's with bf16 autocast, whose contractions round their per-rank sums to
// bf16), with a constant rate or under a learning-rate schedule (a function of the global step
// count, so every rank updates at one device's rate); the epoch's loss and accuracy are the
// global batch's.
func TestFitParallelEquivalence(t *testing.T) {
	d := mixtureRows(t, 96) // 6 steps at batch 16
	const global = 16
	for _, opt := range []struct {
		name  string
		new   func() Optimizer
		amp   string
		sched *Schedule
	}{
		{"sgd", func() Optimizer { return &SGD{LR: 0.1, Momentum: 0.9, Dampening: 0.1} }, "", nil},
		{"adam", adam01, "", nil},
		{"adam-bf16", adam01, "bf16", nil},
		{"sgd-cosine", func() Optimizer { return &SGD{LR: 0.1, Momentum: 0.9} }, "", &Schedule{Kind: "cosine", TMax: 12, MinLR: 0.001}},
		{"adam-step", adam01, "", &Schedule{Kind: "step", StepSize: 1, Gamma: 0.2, StepsPerEpoch: 6}},
		{"adam-bf16-cosine", adam01, "bf16", &Schedule{Kind: "cosine", TMax: 5}},
		{"sgd-onecycle", func() Optimizer { return NewSGD(0.1) }, "", NewOneCycle(12)},
		{"adamw-onecycle", func() Optimizer { o := NewAdamW(); o.LR = 0.01; return o }, "", NewOneCycle(15)},
	} {
		l := Loss{Name: CrossEntropyLoss}
		want, err := Fit(buildModel(t, mixtureAt(global), l), FitOptions{Optimizer: opt.new(), AMP: opt.amp, Schedule: opt.sched, Train: d, Test: d, Epochs: 2, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/%d", opt.name, n), func(t *testing.T) {
				m := buildModel(t, mixtureAt(global/n), l)
				got, err := Fit(m, FitOptions{Optimizer: opt.new(), AMP: opt.amp, Schedule: opt.sched, Train: d, Test: d, Epochs: 2, Seed: 3, Parallel: &Parallel{Devices: refDevices(n)}})
				if err != nil {
					t.Fatal(err)
				}
				prec, tol := ir.F32, 1e-5 // the losses' tolerance: f32's, or bf16's relative 2⁻⁸
				if opt.amp != "" {
					prec, tol = ir.BF16, 4e-3
				}
				compareParamsIn(t, got, want, prec)
				t.Logf("largest difference from one device: %.3g of the parameter's RMS", maxRelDiff(got.Params, want.Params))
				for i, e := range got.Epochs {
					w := want.Epochs[i]
					if e.Train.Rows != w.Train.Rows || e.Steps != w.Steps {
						t.Errorf("epoch %d: %d rows in %d steps, want %d in %d", e.Epoch, e.Train.Rows, e.Steps, w.Train.Rows, w.Steps)
					}
					if diff := e.Train.Loss - w.Train.Loss; diff > tol || diff < -tol {
						t.Errorf("epoch %d: train loss %v, want %v", e.Epoch, e.Train.Loss, w.Train.Loss)
					}
					if diff := e.Train.Accuracy - w.Train.Accuracy; diff > 1e-9 || diff < -1e-9 {
						t.Errorf("epoch %d: train accuracy %v, want %v", e.Epoch, e.Train.Accuracy, w.Train.Accuracy)
					}
					if diff := e.Test.Loss - w.Test.Loss; diff > tol || diff < -tol {
						t.Errorf("epoch %d: test loss %v, want %v", e.Epoch, e.Test.Loss, w.Test.Loss)
					}
				}
			})
		}
	}
}

// A split step run on one device computes what the step as one graph computes, bit for bit on
// the reference interpreter: the update is the same code.
func TestSplitStepIsTheStep(t *testing.T) {
	d := mixtureRows(t, 64)
	m := buildModel(t, mixtureAt(16), Loss{Name: CrossEntropyLoss})
	for _, amp := range []string{"", "f16"} {
		want, err := Fit(m, FitOptions{Optimizer: adam01(), AMP: amp, Train: d, Epochs: 1, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Fit(m, FitOptions{Optimizer: adam01(), AMP: amp, Train: d, Epochs: 1, Seed: 5, Parallel: &Parallel{Devices: refDevices(1)}})
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want.Params {
			for i, v := range w.F {
				if g := got.Params[name].F[i]; g != v {
					t.Fatalf("AMP %q: %s[%d] = %v split, %v as one graph", amp, name, i, g, v)
				}
			}
		}
		for name, w := range want.State {
			if g := got.State[name]; g == nil || g.At(0) != w.At(0) {
				t.Fatalf("AMP %q: state %s differs", amp, name)
			}
		}
	}
}

// Two ranks on the PTX simulator train what one simulated device trains at the global batch,
// with a constant rate and with the compiled update computing a schedule's.
func TestFitParallelOnSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps on three devices")
	}
	d := mixtureRows(t, 32) // 2 steps
	l := Loss{Name: CrossEntropyLoss}
	for _, sched := range []*Schedule{nil, {Kind: "cosine", TMax: 2, MinLR: 0.001}, NewOneCycle(2)} {
		t.Run(fmt.Sprint(sched), func(t *testing.T) {
			want, err := Fit(buildModel(t, mixtureAt(16), l), FitOptions{Optimizer: adam01(), Schedule: sched, Train: d, Epochs: 1, Device: simdev.New(simdev.Options{})})
			if err != nil {
				t.Fatal(err)
			}
			devs := []executor.Device{simdev.New(simdev.Options{}), simdev.New(simdev.Options{})}
			got, err := Fit(buildModel(t, mixtureAt(8), l), FitOptions{Optimizer: adam01(), Schedule: sched, Train: d, Epochs: 1, Parallel: &Parallel{Devices: devs}})
			if err != nil {
				t.Fatal(err)
			}
			compareParams(t, got, want)
			t.Logf("largest difference from one device: %.3g of the parameter's RMS", maxRelDiff(got.Params, want.Params))
		})
	}
}

// The per-rank batch times the ranks must fit the data; a model whose rows are not the data's
// is refused before any rank starts.
func TestFitParallelErrors(t *testing.T) {
	l := Loss{Name: CrossEntropyLoss}
	m := buildModel(t, mixtureAt(16), l)
	_, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: mixtureRows(t, 40), Epochs: 1, Parallel: &Parallel{Devices: refDevices(4)}})
	if err == nil || !strings.Contains(err.Error(), "no global batch of 64 (4 ranks × 16)") {
		t.Errorf("40 rows over 4 ranks of 16: %v", err)
	}
	_, err = Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: mixtureRows(t, 64), Epochs: 1, Parallel: &Parallel{}})
	if err == nil || !strings.Contains(err.Error(), "no devices") {
		t.Errorf("no devices: %v", err)
	}
}

// failingComm is a communicator whose all-reduces fail from the given call on.
type failingComm struct {
	collective.Comm
	after int
	calls int
}

func (f *failingComm) AllReduce(send, recv executor.Ptr, count int, dt ir.DType, op collective.Op, s collective.Stream) error {
	if f.calls++; f.calls > f.after {
		return errors.New("link down")
	}
	return f.Comm.AllReduce(send, recv, count, dt, op, s)
}

// A rank whose communicator fails ends training on every rank with an error naming it, without
// waiting for the collective's timeout.
func TestFitParallelRankFails(t *testing.T) {
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	comms := func(mems []collective.Memory) ([]collective.Comm, error) {
		cs, err := collective.NewLocal(mems, collective.Options{Timeout: time.Minute})
		if err != nil {
			return nil, err
		}
		cs[1] = &failingComm{Comm: cs[1], after: 3}
		return cs, nil
	}
	start := time.Now()
	_, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: mixtureRows(t, 64), Epochs: 1, Parallel: &Parallel{Devices: refDevices(2), Comms: comms}})
	if err == nil || !strings.Contains(err.Error(), "rank 1 (ref)") || !strings.Contains(err.Error(), "link down") {
		t.Errorf("got %v, want rank 1's link down", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v: the other rank waited for the timeout", took)
	}
}

// adam01 is Adam with learning rate 0.01.
func adam01() Optimizer {
	o := NewAdam()
	o.LR = 0.01
	return o
}

// Buckets hold the parameters last first, the first bucket capped at 1 MB and the others at the
// cap, a parameter larger than the cap alone in its bucket (DDP's bucketing).
func TestMakeBuckets(t *testing.T) {
	g := ir.NewGraph("b")
	sizes := map[string]int{"a": 100 << 10, "b": 600 << 10, "c": 600 << 10, "d": 3 << 20, "e": 300 << 10, "f": 200 << 10}
	var names []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		g.Param(n, ir.T(ir.U8, sizes[n]), nil)
		names = append(names, n)
	}
	got := makeBuckets(g, names, 2<<20)
	want := [][]string{{"f", "e"}, {"d"}, {"c", "b", "a"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
}

// maxRelDiff is the largest |got − want| of any element over the RMS of its parameter in want.
func maxRelDiff(got, want map[string]*tensor.Tensor) float64 {
	worst := 0.0
	for name, w := range want {
		var ss float64
		for _, v := range w.F {
			ss += v * v
		}
		rms := math.Sqrt(ss / float64(len(w.F)))
		for i, v := range w.F {
			worst = max(worst, math.Abs(got[name].F[i]-v)/rms)
		}
	}
	return worst
}

// Two epochs in one data-parallel run and one epoch, a checkpoint, and one more resumed from it
// train the same bits: the checkpoint holds rank 0's weights and state, broadcast to every rank
// on resuming, and its step count continues a learning-rate schedule where it stopped.
func TestFitParallelResume(t *testing.T) {
	d := mixtureRows(t, 64)
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	par := &Parallel{Devices: refDevices(2)}
	for _, sched := range []*Schedule{nil, {Kind: "cosine", TMax: 8, MinLR: 1e-4}, {Kind: "step", StepSize: 1, Gamma: 0.1, StepsPerEpoch: 4}, NewOneCycle(8)} {
		t.Run(fmt.Sprint(sched), func(t *testing.T) {
			want, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: sched, Train: d, Epochs: 2, Seed: 7, Parallel: par})
			if err != nil {
				t.Fatal(err)
			}
			ckpt := t.TempDir() + "/c.safetensors"
			if _, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: sched, Train: d, Epochs: 1, Seed: 7, Parallel: par, Save: ckpt}); err != nil {
				t.Fatal(err)
			}
			full, err := m.Step(adam01(), Options{Seed: 7, Schedule: sched})
			if err != nil {
				t.Fatal(err)
			}
			from, err := full.Resume(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: sched, Train: d, Epochs: 1, Seed: 7, Parallel: par, Resume: from})
			if err != nil {
				t.Fatal(err)
			}
			if e := got.Epochs[0]; e.Epoch != 2 || e.Steps != 8 {
				t.Errorf("resumed epoch %d after %d steps, want 2 after 8", e.Epoch, e.Steps)
			}
			for name, w := range want.Params {
				for i, v := range w.F {
					if g := got.Params[name].F[i]; g != v {
						t.Fatalf("%s[%d] = %v resumed, %v in one run", name, i, g, v)
					}
				}
			}
		})
	}
}

// logDevice is a simulated device that logs its launches, by module in load order.
type logDevice struct {
	executor.Device
	log     *callLog
	modules int
}

func (d *logDevice) Load(ptx []byte) (executor.Module, error) {
	m, err := d.Device.Load(ptx)
	d.modules++
	return &logModule{Module: m, log: d.log, id: d.modules}, err
}

type logModule struct {
	executor.Module
	log *callLog
	id  int
}

func (m *logModule) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	m.log.add(fmt.Sprintf("launch %d", m.id))
	return m.Module.Launch(kernel, cfg, args)
}

// logComm logs its all-reduces of float32 (the gradients').
type logComm struct {
	collective.Comm
	log *callLog
}

func (c *logComm) AllReduce(send, recv executor.Ptr, count int, dt ir.DType, op collective.Op, s collective.Stream) error {
	if dt == ir.F32 {
		c.log.add("allreduce")
	}
	return c.Comm.AllReduce(send, recv, count, dt, op, s)
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

// On compiled ranks each bucket's all-reduce is issued as soon as the kernels writing its
// gradients are queued, before the backward pass ends (and trains the same parameters as
// issuing them all after it); with NoOverlap every all-reduce comes after the last backward
// kernel.
func TestFitParallelOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps")
	}
	d := mixtureRows(t, 16) // one step
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	var results []*FitResult
	for _, noOverlap := range []bool{false, true} {
		logs := []*callLog{{}, {}}
		devs := []executor.Device{&logDevice{Device: simdev.New(simdev.Options{}), log: logs[0]}, &logDevice{Device: simdev.New(simdev.Options{}), log: logs[1]}}
		comms := func(mems []collective.Memory) ([]collective.Comm, error) {
			cs, err := collective.NewLocal(mems, collective.Options{})
			for i := range cs {
				cs[i] = &logComm{Comm: cs[i], log: logs[i]}
			}
			return cs, err
		}
		// A bucket per parameter: 4 all-reduces, fc2's gradients before fc1's.
		res, err := Fit(m, FitOptions{Optimizer: adam01(), Train: d, Epochs: 1, Parallel: &Parallel{Devices: devs, Comms: comms, BucketBytes: 16, NoOverlap: noOverlap}})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		for r, l := range logs {
			// Module 1 is the update's, module 2 the gradients'.
			first, last, n := -1, -1, 0
			for k, c := range l.calls {
				switch c {
				case "allreduce":
					n++
					if first < 0 {
						first = k
					}
				case "launch 2":
					last = k
				}
			}
			t.Logf("no overlap %v, rank %d: %v", noOverlap, r, l.calls)
			if n != 4 {
				t.Errorf("rank %d: %d all-reduces of gradients, want 4", r, n)
			}
			if overlapped := first < last; overlapped == noOverlap {
				t.Errorf("no overlap %v, rank %d: the first all-reduce is call %d, the last backward kernel %d", noOverlap, r, first, last)
			}
		}
	}
	for name, w := range results[1].Params {
		for i, v := range w.F {
			if g := results[0].Params[name].F[i]; g != v {
				t.Fatalf("%s[%d] = %v overlapped, %v not", name, i, g, v)
			}
		}
	}
}

// Ranks on runtime/cuda's device over the simulator-backed driver (streams, events, queued
// work, run in each of its schedules), given to the collective as plain memory, train what one
// simulated device trains: their collectives are not stream-ordered, so they run when called and
// the host waits for the last bucket before the optimizer (ddp_order_test.go has the
// stream-ordered ranks).
func TestFitParallelOnCUDADriver(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps on three devices")
	}
	d := mixtureRows(t, 32)
	l := Loss{Name: CrossEntropyLoss}
	want, err := Fit(buildModel(t, mixtureAt(16), l), FitOptions{Optimizer: adam01(), Train: d, Epochs: 1, Device: simdev.New(simdev.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	for _, sched := range []simdriver.Schedule{simdriver.IssueOrder, simdriver.LowStreamFirst, simdriver.HighStreamFirst} {
		t.Run(sched.String(), func(t *testing.T) {
			var devs []executor.Device
			for range 2 {
				dev, err := cuda.Open(simdriver.NewWithOptions(simdriver.Options{Schedule: sched}), 0, cuda.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer dev.Close()
				devs = append(devs, dev)
			}
			got, err := Fit(buildModel(t, mixtureAt(8), l), FitOptions{Optimizer: adam01(), Train: d, Epochs: 1, Parallel: &Parallel{Devices: devs, BucketBytes: 16}})
			if err != nil {
				t.Fatal(err)
			}
			compareParams(t, got, want)
		})
	}
}

// noLoadDevice is a simulated device that cannot load modules.
type noLoadDevice struct{ executor.Device }

func (noLoadDevice) Load([]byte) (executor.Module, error) { return nil, errors.New("out of modules") }

// A rank whose device fails while the ranks start ends Fit with its error, naming it; the other
// rank, waiting in the broadcast, stops at once (a regression: the failed rank's half-made state
// was closed as if made).
func TestFitParallelRankFailsToStart(t *testing.T) {
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	devs := []executor.Device{nil, noLoadDevice{simdev.New(simdev.Options{})}}
	_, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), Train: mixtureRows(t, 32), Epochs: 1, Parallel: &Parallel{Devices: devs}})
	if err == nil || !strings.Contains(err.Error(), "rank 1 (sim") || !strings.Contains(err.Error(), "out of modules") {
		t.Errorf("got %v, want rank 1's load error", err)
	}
}

// With f16 loss scaling, gradients that overflow on one rank only make every rank skip the step
// (the averaged gradients are not finite anywhere), as one device at the global batch skips it:
// the same steps skipped, the same parameters (within f16's tolerance).
func TestFitParallelSkipsOverflowEverywhere(t *testing.T) {
	tr, _, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	const seed, rows = 4, 48
	order := (&data.Loader{Data: data.Head(tr, rows), Batch: 16, Shuffle: true, Seed: seed}).Order(1)
	row := order[16+12] // step 2, in rank 1's half of the global batch
	l := Loss{Name: CrossEntropyLoss}
	run := func(big bool, m *Model, par *Parallel) ([]float64, *FitResult) {
		x := tr.X.Clone()
		if big {
			x.F[2*row], x.F[2*row+1] = 1e6, 1e6 // beyond f16's 65504
		}
		var skipped []float64
		res, err := Fit(m, FitOptions{Optimizer: NewSGD(0.1), AMP: "f16", Train: data.Head(&data.Tensors{Name: "mixture", X: x, Y: tr.Y}, rows),
			Epochs: 1, Seed: seed, Parallel: par,
			OnStep: func(s StepEnd) error { skipped = append(skipped, s.Outputs[FoundInfName].F[0]); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return skipped, res
	}
	clean, _ := run(false, buildModel(t, mixtureAt(16), l), nil)
	oneSkips, want := run(true, buildModel(t, mixtureAt(16), l), nil)
	twoSkips, got := run(true, buildModel(t, mixtureAt(8), l), &Parallel{Devices: refDevices(2)})
	if clean[1] != 0 || oneSkips[1] != 1 {
		t.Fatalf("step 2 found_inf %v without the large row, %v with it: the test's premise fails", clean[1], oneSkips[1])
	}
	if fmt.Sprint(twoSkips) != fmt.Sprint(oneSkips) {
		t.Errorf("found_inf by step: rank 0 of two %v, one device %v", twoSkips, oneSkips)
	}
	compareParamsIn(t, got, want, ir.F16) // the contractions round their per-rank sums to f16
}

// bnDropoutAt is a 2→16→3 MLP with BatchNorm1d and dropout at batch n.
func bnDropoutAt(n int) func(*frontend.Builder) {
	return func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, n, 2)
		fc1, bn, fc2 := nn.NewLinear(b, "fc1", 2, 16), nn.NewBatchNorm1d(b, "bn", 16), nn.NewLinear(b, "fc2", 16, 3)
		b.Output("logits", fc2.Forward(nn.Dropout{P: 0.25}.Forward(bn.Forward(fc1.Forward(x)).Relu())))
	}
}

// Rank r's dropout key is a one-device run's with seed+r: rank 0's is the one-device key, the
// others differ in the seed half and count steps alike.
func TestRankKey(t *testing.T) {
	key := &tensor.Tensor{Type: ir.T(ir.I64), I: []int64{(1<<31-1)<<32 | 5}}
	state := map[string]*tensor.Tensor{frontend.RandomKeyName: key, "opt.step": tensor.New(ir.T(ir.F32))}
	if got := rankKey(state, 0); got[frontend.RandomKeyName] != key {
		t.Errorf("rank 0's key changed")
	}
	got := rankKey(state, 2)[frontend.RandomKeyName].I[0]
	if want := int64(1<<32 | 5); got != want { // seed 2³¹−1 + 2 wraps to 1
		t.Errorf("rank 2's key %#x, want %#x", got, want)
	}
	if key.I[0] != (1<<31-1)<<32|5 {
		t.Errorf("rankKey changed the caller's state")
	}
}

// A model with BatchNorm and dropout trains data-parallel: each rank normalizes with its own
// batch's statistics and drops with its own stream, and rank 0's running statistics and random
// key are the ones returned (its key the one-device run's: the seed's, counted on by a step).
func TestFitParallelBatchNormDropout(t *testing.T) {
	d := mixtureRows(t, 64)
	l := Loss{Name: CrossEntropyLoss}
	one, err := Fit(buildModel(t, bnDropoutAt(16), l), FitOptions{Optimizer: NewSGD(0.1), Train: d, Epochs: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	two, err := Fit(buildModel(t, bnDropoutAt(8), l), FitOptions{Optimizer: NewSGD(0.1), Train: d, Epochs: 1, Seed: 9, Parallel: &Parallel{Devices: refDevices(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := two.State[frontend.RandomKeyName].I[0], one.State[frontend.RandomKeyName].I[0]; g != w {
		t.Errorf("rank 0's random key %#x, one device's %#x", g, w)
	}
	for _, name := range []string{"bn.running_mean", "bn.running_var"} {
		if two.Params[name] == nil || slices.Equal(two.Params[name].F, one.Params[name].F) {
			t.Errorf("%s: rank 0's running statistics should be its own batches', not the global batch's", name)
		}
	}
	if l := two.Epochs[0].Train.Loss; math.IsNaN(l) || l <= 0 {
		t.Errorf("train loss %v", l)
	}
}
