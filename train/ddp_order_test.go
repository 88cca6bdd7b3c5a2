package train

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/runtime/simrank"
)

// The rehearsal's ordering contract, on ranks that are runtime/cuda's device over the
// simulator-backed driver (runtime/simrank) with stream-ordered simulated collectives: the
// buckets' all-reduces are queued on the communication stream after an event on the compute
// stream, the optimizer's kernels wait for the last one, and the host waits for neither.

// orderSchedules are the driver's fixed schedules and some seeded interleavings.
var orderSchedules = []simdriver.Options{
	{Schedule: simdriver.IssueOrder}, {Schedule: simdriver.LowStreamFirst}, {Schedule: simdriver.HighStreamFirst},
	{Schedule: simdriver.Random, Seed: 1}, {Schedule: simdriver.Random, Seed: 2}, {Schedule: simdriver.Random, Seed: 3}, {Schedule: simdriver.Random, Seed: 4},
}

func scheduleName(o simdriver.Options) string {
	if o.Schedule == simdriver.Random {
		return fmt.Sprintf("random-%d", o.Seed)
	}
	return strings.ReplaceAll(o.Schedule.String(), " ", "-")
}

// noCommWait is a simulated GPU whose communication stream does not wait for the compute
// stream: a bucket's all-reduce may read its gradients before the backward kernels write them.
type noCommWait struct{ *simrank.Device }

func (noCommWait) CommAfterCompute() error { return nil }

// noComputeWait is a simulated GPU whose compute stream does not wait for the communication
// stream: the optimizer may read gradients the all-reduces have yet to average.
type noComputeWait struct{ *simrank.Device }

func (noComputeWait) ComputeAfterComm() error { return nil }

// orderRun trains rows/16 steps of global batch 16 on 2 simulated GPUs in schedule o, each wrapped by
// wrap, and returns the result and the GPUs (onStart, if not nil, sees them when the steps start).
func orderRun(t *testing.T, o simdriver.Options, rows int, wrap func(*simrank.Device) executor.Device, onStart func([]*simrank.Device, Start) error) (*FitResult, []*simrank.Device) {
	t.Helper()
	var devs []executor.Device
	var sims []*simrank.Device
	for range 2 {
		dev, err := simrank.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		sims = append(sims, dev)
		devs = append(devs, wrap(dev))
	}
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	// A bucket per parameter: 4 all-reduces per step, queued during the backward pass.
	opts := FitOptions{Optimizer: adam01(), Train: mixtureRows(t, rows), Epochs: 1, Parallel: &Parallel{Devices: devs, BucketBytes: 16}}
	if onStart != nil {
		opts.OnStart = func(s Start) error { return onStart(sims, s) }
	}
	got, err := Fit(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return got, sims
}

// oneDevice is what one simulated device trains at the global batch of 16 on rows rows.
func oneDevice(t *testing.T, rows int) *FitResult {
	t.Helper()
	want, err := Fit(buildModel(t, mixtureAt(16), Loss{Name: CrossEntropyLoss}), FitOptions{Optimizer: adam01(), Train: mixtureRows(t, rows), Epochs: 1, Device: simdev.New(simdev.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// sameParams reports whether got's parameters are want's within f32's tolerance.
func sameParams(got, want *FitResult) bool {
	for name, w := range want.Params {
		if !check.CompareIn(name, got.Params[name], w, ir.F32, false).Pass() {
			return false
		}
	}
	return true
}

func asIs(d *simrank.Device) executor.Device { return d }

// In every schedule, 2 ranks train what one device trains at the global batch.
func TestFitParallelStreamOrdered(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps in 7 schedules")
	}
	want := oneDevice(t, 32)
	for _, o := range orderSchedules {
		t.Run(scheduleName(o), func(t *testing.T) {
			got, _ := orderRun(t, o, 32, asIs, nil)
			compareParams(t, got, want)
			t.Logf("largest difference from one device: %.3g of the parameter's RMS", maxRelDiff(got.Params, want.Params))
		})
	}
}

// Each of the two waits is needed: without either, some schedule trains wrong parameters.
func TestFitParallelMissingWait(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates train steps in 14 schedules")
	}
	want := oneDevice(t, 32)
	for _, c := range []struct {
		name string
		wrap func(*simrank.Device) executor.Device
	}{
		{"no-comm-after-compute", func(d *simrank.Device) executor.Device { return noCommWait{d} }},
		{"no-compute-after-comm", func(d *simrank.Device) executor.Device { return noComputeWait{d} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wrong []string
			for _, o := range orderSchedules {
				if got, _ := orderRun(t, o, 32, c.wrap, nil); !sameParams(got, want) {
					wrong = append(wrong, scheduleName(o))
				}
			}
			if len(wrong) == 0 {
				t.Fatalf("every schedule trained the right parameters without the wait")
			}
			t.Logf("wrong parameters in: %s", strings.Join(wrong, ", "))
		})
	}
}

// The driver's trace of a step shows the buckets' all-reduces running on the communication
// stream before the backward pass's last kernel, in the schedules that run work as it is issued
// or the communication stream first.
func TestFitParallelTraceOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles and simulates a train step")
	}
	// The backward pass's kernels: the gradients' program's, bind-time ones aside.
	m := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	split, err := m.SplitStep(adam01(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	arts, err := compileSplit(split, m, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	backward := 0
	for _, k := range arts.grad.Plan.Kernels {
		if !k.BindTime {
			backward++
		}
	}
	for _, o := range []simdriver.Options{{Schedule: simdriver.IssueOrder}, {Schedule: simdriver.HighStreamFirst}} {
		t.Run(scheduleName(o), func(t *testing.T) {
			o.Trace = true
			marks := make([]int, 2)
			_, sims := orderRun(t, o, 16, asIs, func(sims []*simrank.Device, _ Start) error {
				for r, s := range sims {
					marks[r] = len(s.Trace()) // the step's work starts here
				}
				return nil
			})
			for r, s := range sims {
				tr := s.Trace()[marks[r]:]
				before, err := bucketsBefore(tr, backward, 4)
				if err != nil {
					t.Fatalf("rank %d: %v in the step's trace %v", r, err, tr)
				}
				if before == 0 {
					t.Errorf("rank %d: no bucket all-reduce ran before the backward pass's last kernel: %v", r, tr)
				}
				t.Logf("rank %d: %d of 4 buckets ran before the backward pass's last kernel", r, before)
			}
		})
	}
}

// bucketsBefore reads a step's trace: the compute stream is the first kernel's, the backward
// pass's last kernel its backward-th, the buckets the first n host functions on another stream.
// It returns how many buckets ran before that last backward kernel.
func bucketsBefore(tr []simdriver.Ran, backward, n int) (int, error) {
	compute, kernels, last := -1, 0, -1
	var buckets []int
	for k, r := range tr {
		switch {
		case strings.HasPrefix(r.What, "cuLaunchKernel"):
			if compute < 0 {
				compute = k
			}
			if r.Stream == tr[compute].Stream {
				if kernels++; kernels == backward {
					last = k
				}
			}
		case r.What == "cuLaunchHostFunc" && len(buckets) < n && (compute < 0 || r.Stream != tr[compute].Stream):
			buckets = append(buckets, k)
		}
	}
	if last < 0 || len(buckets) < n {
		return 0, fmt.Errorf("%d kernels and %d host functions, want at least %d and %d", kernels, len(buckets), backward, n)
	}
	before := 0
	for _, k := range buckets {
		if k < last {
			before++
		}
	}
	return before, nil
}
