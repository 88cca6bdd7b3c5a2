package collective

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
)

// orderedPTX: twice writes dst = 2×src, plus1 dst = src+1, over one block of n threads.
var orderedPTX = ".version 7.8\n.target sm_80\n.address_size 64\n" +
	elementwise("twice", "add.f32 %f2, %f1, %f1;") + elementwise("plus1", "add.f32 %f2, %f1, 0f3F800000;")

// elementwise is a kernel that sets dst[tid] from %f1 = src[tid] with op, which leaves %f2.
func elementwise(name, op string) string {
	return fmt.Sprintf(`.visible .entry %s(.param .u64 dst, .param .u64 src)
{
	.reg .b32 %%r<2>;
	.reg .b64 %%rd<6>;
	.reg .f32 %%f<3>;
	ld.param.u64 %%rd1, [dst];
	ld.param.u64 %%rd2, [src];
	mov.u32 %%r1, %%tid.x;
	mul.wide.u32 %%rd3, %%r1, 4;
	add.s64 %%rd4, %%rd2, %%rd3;
	ld.global.f32 %%f1, [%%rd4];
	%s
	add.s64 %%rd5, %%rd1, %%rd3;
	st.global.f32 [%%rd5], %%f2;
	ret;
}
`, name, op)
}

const orderedN = 8

// rankDevice is one rank's CUDA device over a simulator-backed driver of its own, with a
// communication stream and the buffers of a data-parallel step: the input x, the gradient g,
// other backward work h, and y, what the step after the all-reduce computes.
type rankDevice struct {
	drv        *simdriver.Driver
	dev        *cuda.Device
	comm       cuda.Stream
	mod        executor.Module
	x, g, h, y executor.Ptr
}

func newRankDevice(t *testing.T, rank int, o simdriver.Options) *rankDevice {
	t.Helper()
	o.Trace = true
	r := &rankDevice{drv: simdriver.NewWithOptions(o)}
	var err error
	if r.dev, err = cuda.Open(r.drv, 0, cuda.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.dev.Close() })
	if r.comm, err = r.dev.NewStream(); err != nil {
		t.Fatal(err)
	}
	if r.mod, err = r.dev.Load([]byte(orderedPTX)); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, orderedN)
	for i := range x {
		x[i] = float64((rank + 1) * (i + 1))
	}
	r.x = put(t, r.dev, ir.F32, x)
	zeros := make([]float64, orderedN)
	r.g, r.h, r.y = put(t, r.dev, ir.F32, zeros), put(t, r.dev, ir.F32, zeros), put(t, r.dev, ir.F32, zeros)
	if err := r.dev.Sync(); err != nil { // what follows is the step, queued until its sync
		t.Fatal(err)
	}
	return r
}

// streamDevice is the rank's device for the stream-ordered collectives.
func (r *rankDevice) streamDevice() *StreamDevice {
	return OnCUDA(r.dev, r.drv.Memory())
}

func (r *rankDevice) launch(kernel string, dst, src executor.Ptr) error {
	return r.launchN(kernel, dst, src, orderedN)
}

// launchN launches kernel over n elements.
func (r *rankDevice) launchN(kernel string, dst, src executor.Ptr, n int) error {
	_, err := r.mod.Launch(kernel, executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{n, 1, 1}}, []executor.Ptr{dst, src})
	return err
}

// waits says which of a step's two waits it makes: the communication stream's for the event
// after the gradient kernel, and the compute stream's for the event after the all-reduce.
type waits struct{ gradToComm, commToCompute bool }

// step is a data-parallel step on the rank, as a trainer issues it: the gradient kernel on the
// compute stream, an event; the communication stream waits for it and all-reduces the gradient;
// other backward work on the compute stream meanwhile; the compute stream waits for the
// all-reduce's event and a kernel reads the reduced gradient. It returns y.
func (r *rankDevice) step(c Comm, w waits) ([]float64, error) {
	if err := r.launch("twice", r.g, r.x); err != nil {
		return nil, err
	}
	grad, err := r.dev.Record()
	if err != nil {
		return nil, err
	}
	if w.gradToComm {
		if err := r.dev.WaitOn(r.comm, grad); err != nil {
			return nil, err
		}
	}
	if err := c.AllReduce(r.g, r.g, orderedN, ir.F32, Sum, Stream(r.comm)); err != nil {
		return nil, err
	}
	reduced, err := r.dev.RecordOn(r.comm)
	if err != nil {
		return nil, err
	}
	if err := r.launch("plus1", r.h, r.x); err != nil {
		return nil, err
	}
	if w.commToCompute {
		if err := r.dev.Wait(reduced); err != nil {
			return nil, err
		}
	}
	if err := r.launch("twice", r.y, r.g); err != nil {
		return nil, err
	}
	if err := r.dev.Sync(); err != nil {
		return nil, err
	}
	if err := c.Wait(); err != nil {
		return nil, err
	}
	b := make([]byte, 4*orderedN)
	if err := r.dev.Read(b, r.y); err != nil {
		return nil, err
	}
	return decode(ir.F32, b), nil
}

// orderedWorld makes two ranks on rank devices with the given schedules, in process or over TCP.
func orderedWorld(t *testing.T, transport string, scheds [2]simdriver.Options, opt Options) ([]*rankDevice, []Comm) {
	t.Helper()
	ranks := []*rankDevice{newRankDevice(t, 0, scheds[0]), newRankDevice(t, 1, scheds[1])}
	mems := []Memory{ranks[0].streamDevice(), ranks[1].streamDevice()}
	var comms []Comm
	if transport == "local" {
		var err error
		if comms, err = NewLocal(mems, opt); err != nil {
			t.Fatal(err)
		}
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		comms = make([]Comm, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[1], errs[1] = DialTCP(ln.Addr().String(), 1, 2, mems[1], opt)
		}()
		comms[0], errs[0] = ServeTCP(ln, 2, mems[0], opt)
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
	}
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	return ranks, comms
}

// runSteps runs a step on each rank, each from its own goroutine.
func runSteps(ranks []*rankDevice, comms []Comm, w waits) ([][]float64, []error) {
	ys := make([][]float64, len(ranks))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ys[i], errs[i] = ranks[i].step(comms[i], w)
		}()
	}
	wg.Wait()
	return ys, errs
}

// wantY is y on every rank: 2 × the sum over the two ranks of 2x, x = (rank+1)(i+1).
func wantY() []float64 {
	y := make([]float64, orderedN)
	for i := range y {
		y[i] = 2 * (2*float64(i+1) + 2*float64(2*(i+1)))
	}
	return y
}

var schedules = []simdriver.Schedule{simdriver.IssueOrder, simdriver.LowStreamFirst, simdriver.HighStreamFirst}

// With both waits, every schedule of either rank's streams gives the reduced gradient to the
// kernel after the all-reduce, in process and over TCP.
func TestOrderedAllReduceSchedules(t *testing.T) {
	for _, transport := range []string{"local", "tcp"} {
		for _, s0 := range schedules {
			for _, s1 := range schedules {
				if transport == "tcp" && s0 != s1 { // the transport does not change the order; keep it short
					continue
				}
				t.Run(fmt.Sprintf("%s/%v+%v", transport, s0, s1), func(t *testing.T) {
					ranks, comms := orderedWorld(t, transport, [2]simdriver.Options{{Schedule: s0}, {Schedule: s1}}, Options{Timeout: 20 * time.Second})
					ys, errs := runSteps(ranks, comms, waits{true, true})
					for r := range ranks {
						if errs[r] != nil {
							t.Fatalf("rank %d: %v", r, errs[r])
						}
						if !slices.Equal(ys[r], wantY()) {
							t.Errorf("rank %d: y = %v, want %v", r, ys[r], wantY())
						}
					}
				})
			}
		}
	}
}

// A missing wait shows: without the communication stream's wait for the gradient, a schedule
// that runs that stream first all-reduces the gradient before the kernel writes it; without
// the compute stream's wait for the all-reduce, one that runs the compute stream first reads
// the rank's own gradient, unreduced. (Other schedules happen to run them in a working order,
// as a GPU may.)
func TestOrderedAllReduceMissingWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w     waits
		sched simdriver.Schedule
		right bool
	}{
		{"no gradient wait", waits{false, true}, simdriver.IssueOrder, true},
		{"no gradient wait", waits{false, true}, simdriver.LowStreamFirst, true},
		{"no gradient wait", waits{false, true}, simdriver.HighStreamFirst, false},
		{"no all-reduce wait", waits{true, false}, simdriver.IssueOrder, true},
		{"no all-reduce wait", waits{true, false}, simdriver.LowStreamFirst, false},
		{"no all-reduce wait", waits{true, false}, simdriver.HighStreamFirst, true},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.name, tc.sched), func(t *testing.T) {
			ranks, comms := orderedWorld(t, "local", [2]simdriver.Options{{Schedule: tc.sched}, {Schedule: tc.sched}}, Options{Timeout: 20 * time.Second})
			ys, errs := runSteps(ranks, comms, tc.w)
			for r := range ranks {
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				if right := slices.Equal(ys[r], wantY()); right != tc.right {
					t.Errorf("rank %d: y = %v (the reduced gradient's: %v); want right %v", r, ys[r], wantY(), tc.right)
				}
			}
		})
	}
}

// Random interleavings, each rank with a seed of its own: with both waits every seed gives the
// reduced values; with either wait missing some seed gives wrong ones.
func TestOrderedAllReduceRandomSchedules(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    waits
	}{
		{"both waits", waits{true, true}},
		{"no gradient wait", waits{false, true}},
		{"no all-reduce wait", waits{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrong := 0
			for seed := range uint64(12) {
				ranks, comms := orderedWorld(t, "local", [2]simdriver.Options{
					{Schedule: simdriver.Random, Seed: 2 * seed}, {Schedule: simdriver.Random, Seed: 2*seed + 1}}, Options{Timeout: 20 * time.Second})
				ys, errs := runSteps(ranks, comms, tc.w)
				for r := range ranks {
					if errs[r] != nil {
						t.Fatalf("seed %d, rank %d: %v", seed, r, errs[r])
					}
					if !slices.Equal(ys[r], wantY()) {
						wrong++
						if tc.w == (waits{true, true}) {
							t.Errorf("seed %d, rank %d: y = %v, want %v", seed, r, ys[r], wantY())
						}
					}
				}
			}
			if tc.w != (waits{true, true}) && wrong == 0 {
				t.Errorf("every seed gave the right values with a wait missing")
			}
			t.Logf("%d of 24 rank-steps wrong", wrong)
		})
	}
}

// The order the work ran in: the all-reduce runs after the gradient kernel and before the
// kernel reading its result, and, in the schedules that do not hold the communication stream
// back, before the other backward work: communication overlaps the backward pass.
func TestOrderedAllReduceOverlap(t *testing.T) {
	for _, tc := range []struct {
		sched   simdriver.Schedule
		overlap bool
	}{
		{simdriver.IssueOrder, true},
		{simdriver.LowStreamFirst, false},
		{simdriver.HighStreamFirst, true},
	} {
		t.Run(tc.sched.String(), func(t *testing.T) {
			ranks, comms := orderedWorld(t, "local", [2]simdriver.Options{{Schedule: tc.sched}, {Schedule: tc.sched}}, Options{Timeout: 20 * time.Second})
			if _, errs := runSteps(ranks, comms, waits{true, true}); errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			for r, rd := range ranks {
				var order []string
				for _, ran := range rd.drv.Trace() {
					switch {
					case ran.What == "cuLaunchHostFunc" && ran.Stream == rd.comm:
						order = append(order, "allreduce")
					case strings.HasPrefix(ran.What, "cuLaunchKernel "):
						order = append(order, strings.TrimPrefix(ran.What, "cuLaunchKernel "))
					}
				}
				want := "twice allreduce plus1 twice"
				if !tc.overlap {
					want = "twice plus1 allreduce twice"
				}
				if got := strings.Join(order, " "); got != want {
					t.Errorf("rank %d ran %s, want %s", r, got, want)
				}
			}
		})
	}
}

// Calls on stream 0 of a StreamDevice run at once, as on a device without streams: Wait
// returns their results without the device being synchronized first.
func TestOrderedStreamZero(t *testing.T) {
	ranks, comms := orderedWorld(t, "local", [2]simdriver.Options{}, Options{Timeout: 20 * time.Second})
	for r, c := range comms {
		check(t, c.AllReduce(ranks[r].x, ranks[r].y, orderedN, ir.F32, Sum, 0))
	}
	for r, c := range comms {
		check(t, c.Wait())
		got := decode(ir.F32, get(t, ranks[r].dev, ranks[r].y, ir.F32, orderedN))
		for i, v := range got {
			if v != float64(3*(i+1)) {
				t.Fatalf("rank %d: y = %v, want 3(i+1)", r, got)
			}
		}
	}
}

// A rank whose stream never reaches the call makes the other's fail at the timeout, naming it,
// and its own call fails when its stream does reach it; a rank that aborts makes the other's
// queued call fail naming it, without waiting for the timeout.
func TestOrderedFailures(t *testing.T) {
	for _, transport := range []string{"local", "tcp"} {
		t.Run(transport+"/never runs", func(t *testing.T) {
			ranks, comms := orderedWorld(t, transport, [2]simdriver.Options{}, Options{Timeout: 300 * time.Millisecond})
			for r, c := range comms {
				check(t, c.AllReduce(ranks[r].g, ranks[r].g, orderedN, ir.F32, Sum, Stream(ranks[r].comm)))
			}
			start := time.Now()
			err := comms[0].Wait() // runs rank 0's stream; rank 1's is never synchronized
			if err == nil || !strings.Contains(err.Error(), "rank 1 did not join within 300ms") {
				t.Errorf("rank 0: %v", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("rank 0 failed after %v", d)
			}
			if err := comms[1].Wait(); err == nil || !strings.Contains(err.Error(), "did not join") {
				t.Errorf("rank 1, when its stream ran the call: %v", err)
			}
			if err := comms[0].AllReduce(ranks[0].g, ranks[0].g, orderedN, ir.F32, Sum, Stream(ranks[0].comm)); err == nil {
				t.Error("a call after the asynchronous error was accepted")
			}
		})
		t.Run(transport+"/abort", func(t *testing.T) {
			ranks, comms := orderedWorld(t, transport, [2]simdriver.Options{}, Options{Timeout: time.Minute})
			check(t, comms[0].AllReduce(ranks[0].g, ranks[0].g, orderedN, ir.F32, Sum, Stream(ranks[0].comm)))
			check(t, comms[1].Abort())
			start := time.Now()
			err := comms[0].Wait()
			if err == nil || !strings.Contains(err.Error(), "rank 1 ") {
				t.Errorf("rank 0 after rank 1's abort: %v", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("rank 0 failed after %v", d)
			}
		})
	}
}

// A StreamDevice missing a part is refused when the communicators are made.
func TestOrderedIncompleteDevice(t *testing.T) {
	r := newRankDevice(t, 0, simdriver.Options{})
	sd := r.streamDevice()
	sd.InStream = nil
	_, err := NewLocal([]Memory{r.streamDevice(), sd}, Options{})
	if err == nil || !strings.Contains(err.Error(), "rank 1: a StreamDevice needs") {
		t.Errorf("NewLocal: %v", err)
	}
}

// Every collective is stream-ordered, not only AllReduce: each reads the gradient kernel's output
// on the communication stream after its event, and a kernel on the compute stream reads what it
// received after the collective's event, under the schedules that would expose either wait
// missing.
func TestOrderedCollectives(t *testing.T) {
	g := func(r, i int) float64 { return float64(2 * (r + 1) * (i + 1)) } // the gradient, 2x
	for _, tc := range []struct {
		name string
		recv int // elements received
		call func(c Comm, send, recv executor.Ptr, s Stream) error
		want func(rank, i int) float64
	}{
		{"avg allreduce", orderedN, func(c Comm, send, recv executor.Ptr, s Stream) error {
			return c.AllReduce(send, recv, orderedN, ir.F32, Avg, s)
		}, func(_, i int) float64 { return (g(0, i) + g(1, i)) / 2 }},
		{"broadcast", orderedN, func(c Comm, send, recv executor.Ptr, s Stream) error {
			return c.Broadcast(send, recv, orderedN, ir.F32, 1, s)
		}, func(_, i int) float64 { return g(1, i) }},
		{"allgather", 2 * orderedN, func(c Comm, send, recv executor.Ptr, s Stream) error {
			return c.AllGather(send, recv, orderedN, ir.F32, s)
		}, func(_, i int) float64 { return g(i/orderedN, i%orderedN) }},
		{"reducescatter", orderedN / 2, func(c Comm, send, recv executor.Ptr, s Stream) error {
			return c.ReduceScatter(send, recv, orderedN/2, ir.F32, Sum, s)
		}, func(r, i int) float64 { return g(0, r*orderedN/2+i) + g(1, r*orderedN/2+i) }},
	} {
		for _, sched := range []simdriver.Schedule{simdriver.LowStreamFirst, simdriver.HighStreamFirst} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, sched), func(t *testing.T) {
				ranks, comms := orderedWorld(t, "local", [2]simdriver.Options{{Schedule: sched}, {Schedule: sched}}, Options{Timeout: 20 * time.Second})
				var wg sync.WaitGroup
				for r, rd := range ranks {
					recv := put(t, rd.dev, ir.F32, make([]float64, tc.recv))
					out := put(t, rd.dev, ir.F32, make([]float64, tc.recv))
					check(t, rd.dev.Sync())
					wg.Add(1)
					go func() {
						defer wg.Done()
						got, err := func() ([]float64, error) {
							if err := rd.launch("twice", rd.g, rd.x); err != nil {
								return nil, err
							}
							grad, err := rd.dev.Record()
							if err == nil {
								err = rd.dev.WaitOn(rd.comm, grad)
							}
							if err == nil {
								err = tc.call(comms[r], rd.g, recv, Stream(rd.comm))
							}
							var done executor.Event
							if err == nil {
								done, err = rd.dev.RecordOn(rd.comm)
							}
							if err == nil {
								err = rd.dev.Wait(done)
							}
							if err == nil {
								err = rd.launchN("plus1", out, recv, tc.recv)
							}
							if err == nil {
								err = rd.dev.Sync()
							}
							if err == nil {
								err = comms[r].Wait()
							}
							if err != nil {
								return nil, err
							}
							b := make([]byte, 4*tc.recv)
							err = rd.dev.Read(b, out)
							return decode(ir.F32, b), err
						}()
						if err != nil {
							t.Errorf("rank %d: %v", r, err)
							return
						}
						for i, v := range got {
							if want := tc.want(r, i) + 1; v != want {
								t.Errorf("rank %d: element %d is %v, want %v", r, i, v, want)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}
