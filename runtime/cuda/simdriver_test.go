package cuda_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// TestExamplesOnSimDriver runs the fast example models (with -short, mlp
// alone) through the CUDA device over the simulator-backed driver, with
// each option, and compares them with the reference interpreter: the GPU
// suite's code path, short of the GPU.
func TestExamplesOnSimDriver(t *testing.T) {
	for _, opts := range []cuda.Options{{}, {Sync: true}, {Profile: true, StagingLimit: 1}} {
		t.Run(fmt.Sprintf("sync=%v,profile=%v", opts.Sync, opts.Profile), func(t *testing.T) {
			for _, m := range examples.Tutorials {
				if m.Slow || testing.Short() && m.Name != "mlp" {
					continue
				}
				t.Run(m.Name, func(t *testing.T) {
					dev, err := cuda.Open(simdriver.New(), 0, opts)
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Close()
					prog, inputs := runExample(t, dev, m.Name, m.Model, ptx.Target{SM: 90})
					res, err := prog.Run(inputs)
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range res.Kernels {
						if (k.Counters != nil) != opts.Profile {
							t.Fatalf("kernel %s: counters %+v with profiling %v", k.Name, k.Counters, opts.Profile)
						}
					}
					if opts.Profile {
						b, err := executor.Bench(prog, inputs, 2)
						if err != nil {
							t.Fatal(err)
						}
						for _, k := range b.Kernels {
							if len(k.Times) != 2 || k.Times[0] <= 0 || k.Times[1] <= 0 {
								t.Errorf("kernel %s: bench times %v, want two positive ones (the events')", k.Name, k.Times)
							}
						}
					}
					if s := dev.Stats(); s.Allocated < prog.Memory().Total() {
						t.Errorf("device holds %d bytes, the program %d", s.Allocated, prog.Memory().Total())
					}
				})
			}
		})
	}
}

// TestSimDriverFault: a kernel that reads out of bounds fails at the
// device's sync with the simulator's report and the kernel's name.
func TestSimDriverFault(t *testing.T) {
	dev, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	m, err := dev.Load([]byte(`.version 7.8
.target sm_80
.address_size 64
.visible .entry fault(.param .u64 p)
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	ld.param.u64 %rd1, [p];
	ld.global.u32 %r1, [%rd1+4096];
	st.global.u32 [%rd1], %r1;
	ret;
}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := dev.Alloc(4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Launch("fault", executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}}, []executor.Ptr{p}); err != nil {
		t.Fatal(err)
	}
	err = dev.Sync()
	t.Log(err)
	if err == nil || !strings.HasPrefix(err.Error(), "cuda:0: kernel fault (grid 1x1x1, block 1x1x1) failed: cuStreamSynchronize: CUDA_ERROR_700: ") {
		t.Errorf("Sync: %v", err)
	}
}

// The simulator-backed driver keeps each stream's order and every wait, and nothing else: a read
// on one stream of memory another stream copies sees the copy only when it waits for the copy's
// event, or when the schedule happens to run the copy first.
func TestSimDriverStreamOrder(t *testing.T) {
	for _, tc := range []struct {
		schedule simdriver.Schedule
		wait     bool
		want     byte
	}{
		{simdriver.IssueOrder, false, 2},
		{simdriver.LowStreamFirst, false, 1}, // the reading stream runs first: stale
		{simdriver.HighStreamFirst, false, 2},
		{simdriver.IssueOrder, true, 2},
		{simdriver.LowStreamFirst, true, 2},
		{simdriver.HighStreamFirst, true, 2},
	} {
		t.Run(fmt.Sprintf("%v,wait=%v", tc.schedule, tc.wait), func(t *testing.T) {
			drv := simdriver.NewWithOptions(simdriver.Options{Schedule: tc.schedule})
			if got := unorderedRead(t, drv, []byte{2}, tc.wait); got != tc.want {
				t.Errorf("read %d, want %d", got, tc.want)
			}
		})
	}
}

// Prefetched train steps through the CUDA device (copy stream, events, pinned staging) compute
// what synchronous steps compute, bit for bit, under every schedule the simulator-backed driver
// can run the two streams in: the waits order everything that matters.
func TestSimDriverPrefetchSchedules(t *testing.T) {
	fx := newStepFixture(t, ptx.Target{SM: 90}, 4)
	open := func(s simdriver.Schedule) *cuda.Device {
		dev, err := cuda.Open(simdriver.NewWithOptions(simdriver.Options{Schedule: s}), 0, cuda.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		return dev
	}
	want := fx.run(t, open(simdriver.IssueOrder), false)
	for _, s := range []simdriver.Schedule{simdriver.IssueOrder, simdriver.LowStreamFirst, simdriver.HighStreamFirst} {
		t.Run(s.String(), func(t *testing.T) {
			if got := fx.run(t, open(s), true); got != want {
				t.Errorf("prefetched steps differ from synchronous ones")
			}
		})
	}
}

// stepFixture is a classifier's adam train step compiled for a target, its initial weights and
// a few batches.
type stepFixture struct {
	step    *train.StepGraph
	res     *compiler.Result
	params  map[string]*tensor.Tensor
	batches []map[string]*tensor.Tensor
}

func newStepFixture(t *testing.T, tgt ptx.Target, steps int) *stepFixture {
	t.Helper()
	opt := train.NewAdam()
	opt.LR = 1e-2
	step, err := train.Step("classifier", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 8, 16)
		labels := b.Input("labels", ir.I64, 8)
		fc1, fc2 := nn.NewLinear(b, "fc1", 16, 32), nn.NewLinear(b, "fc2", 32, 4)
		b.Output("loss", frontend.CrossEntropyLoss(fc2.Forward(fc1.Forward(x).Relu()), labels))
	}, opt, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fx := &stepFixture{step: step}
	if fx.res, err = compiler.Compile(step.Graph, compiler.Options{Target: tgt}); err != nil {
		t.Fatal(err)
	}
	if fx.params, err = train.InitParams(step.Graph, 1); err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		b := map[string]*tensor.Tensor{}
		for _, name := range step.Batch {
			b[name] = tensor.RandomInput(step.Graph.Lookup(name), uint64(30+i))
		}
		fx.batches = append(fx.batches, b)
	}
	return fx
}

// run trains on dev, one step per batch, with the next batch prefetched during each step or
// not, and returns the losses and the final weights in hex.
func (fx *stepFixture) run(t *testing.T, dev executor.Device, prefetch bool) string {
	t.Helper()
	prog, err := fx.step.Load(dev, fx.res.Artifact, fx.params, fx.step.InitState())
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	stage := func(b map[string]*tensor.Tensor) {
		s, err := prog.Stage(b)
		if err == nil {
			err = prog.Prefetch(s)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if prefetch {
		stage(fx.batches[0])
	}
	for i, b := range fx.batches {
		in := b
		if prefetch {
			in = nil
		}
		if err := prog.Launch(in); err != nil {
			t.Fatal(err)
		}
		if prefetch && i+1 < len(fx.batches) {
			stage(fx.batches[i+1])
		}
		r, err := prog.Wait()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%x ", r.Outputs[fx.step.Loss].Bytes())
	}
	for _, name := range fx.step.Params {
		w, err := prog.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%x ", w.Bytes())
	}
	return out.String()
}

// unorderedRead writes 1 to a buffer synchronously, then queues on a copy stream a copy of each
// of values to it and an event record, on a reading stream (created first) a wait for that event
// if wait, and a read; it returns what the read saw once the reading stream is synchronized.
func unorderedRead(t *testing.T, drv *simdriver.Driver, values []byte, wait bool) byte {
	t.Helper()
	reader, _ := drv.StreamCreate()
	copier, _ := drv.StreamCreate()
	ev, _ := drv.EventCreate()
	p, err := drv.MemAlloc(4)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.MemcpyHtoD(p, []byte{1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := drv.MemcpyHtoDAsync(p, []byte{v, v, v, v}, copier); err != nil {
			t.Fatal(err)
		}
	}
	if err := drv.EventRecord(ev, copier); err != nil {
		t.Fatal(err)
	}
	if wait {
		if err := drv.StreamWaitEvent(reader, ev); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 4)
	if err := drv.MemcpyDtoHAsync(got, p, reader); err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 {
		t.Fatalf("the asynchronous read ran before a sync: %v", got)
	}
	if err := drv.StreamSynchronize(reader); err != nil {
		t.Fatal(err)
	}
	if err := drv.EventSynchronize(ev); err != nil {
		t.Fatal(err)
	}
	if _, err := drv.EventElapsedTime(ev, ev); err != nil {
		t.Errorf("elapsed time of a completed event: %v", err)
	}
	return got[0]
}

// The random schedule keeps stream order and waits under every seed, and among seeds runs
// unordered work both ways: with the wait a read sees the copies; without it some seed reads
// stale memory and some does not. A seed is one interleaving, the same on every run.
func TestSimDriverRandomSchedule(t *testing.T) {
	read := func(seed uint64, wait bool) byte {
		// Two copies, so the reader may run before, between or after them.
		return unorderedRead(t, simdriver.NewWithOptions(simdriver.Options{Schedule: simdriver.Random, Seed: seed}), []byte{2, 3}, wait)
	}
	seen := map[byte]bool{}
	for seed := range uint64(16) {
		if got := read(seed, true); got != 3 {
			t.Errorf("seed %d with the wait: read %d, want 3", seed, got)
		}
		got := read(seed, false)
		if again := read(seed, false); again != got {
			t.Errorf("seed %d read %d, then %d", seed, got, again)
		}
		seen[got] = true
	}
	if !seen[1] || !seen[3] {
		t.Errorf("without the wait, 16 seeds read %v: want both the stale 1 and the copied 3", seen)
	}
}
