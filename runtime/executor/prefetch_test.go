package executor_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// streamsDev is the simulator with executor.Streams that logs what the program issues, in order.
// The simulator runs everything at once, so the log is the issue order; the test reads the
// ordering contract from it.
type streamsDev struct {
	*simdev.Device
	log    []string
	last   executor.Event
	live   map[executor.Event]bool
	mu     sync.Mutex // AllocHost and FreeHost may be called from a loader's goroutine
	pinned map[*byte]int
}

func newStreamsDev() *streamsDev {
	return &streamsDev{Device: simdev.New(simdev.Options{}), live: map[executor.Event]bool{}, pinned: map[*byte]int{}}
}

func (d *streamsDev) logf(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	if line == "launch" && len(d.log) > 0 && d.log[len(d.log)-1] == "launch" {
		return // a run's kernels are one line
	}
	d.log = append(d.log, line)
}

func (d *streamsDev) event() executor.Event {
	d.last++
	d.live[d.last] = true
	return d.last
}

func (d *streamsDev) check(e executor.Event) error {
	if !d.live[e] {
		return fmt.Errorf("event e%d is not live", e)
	}
	return nil
}

func (d *streamsDev) Record() (executor.Event, error) {
	e := d.event()
	d.logf("record e%d", e)
	return e, nil
}

func (d *streamsDev) Upload(copies []executor.HostCopy, after executor.Event) (executor.Event, error) {
	if after != 0 {
		if err := d.check(after); err != nil {
			return 0, err
		}
	}
	for _, c := range copies {
		if !d.isPinned(c.Src) {
			return 0, fmt.Errorf("upload from pageable memory")
		}
		if err := d.Write(c.Dst, c.Src); err != nil {
			return 0, err
		}
	}
	e := d.event()
	d.logf("upload after e%d: e%d", after, e)
	return e, nil
}

func (d *streamsDev) Wait(e executor.Event) error {
	d.logf("wait e%d", e)
	return d.check(e)
}

func (d *streamsDev) Release(e executor.Event) error {
	if err := d.check(e); err != nil {
		return err
	}
	delete(d.live, e)
	return nil
}

func (d *streamsDev) AllocHost(n int64) ([]byte, error) {
	b := make([]byte, n)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pinned[&b[0]] = len(b)
	return b, nil
}

func (d *streamsDev) FreeHost(b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pinned[&b[0]] == 0 {
		return fmt.Errorf("not pinned")
	}
	delete(d.pinned, &b[0])
	return nil
}

func (d *streamsDev) isPinned(b []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := uintptr(unsafe.Pointer(&b[0]))
	for base, n := range d.pinned {
		if lo := uintptr(unsafe.Pointer(base)); p >= lo && p+uintptr(len(b)) <= lo+uintptr(n) {
			return true
		}
	}
	return false
}

func (d *streamsDev) Sync() error {
	d.logf("sync")
	return d.Device.Sync()
}

func (d *streamsDev) Load(ptx []byte) (executor.Module, error) {
	m, err := d.Device.Load(ptx)
	return loggedModule{m, d}, err
}

type loggedModule struct {
	executor.Module
	d *streamsDev
}

func (m loggedModule) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	m.d.logf("launch")
	return m.Module.Launch(kernel, cfg, args)
}

// loadAdam loads the classifier's adam train step on dev.
func loadAdam(t *testing.T, dev executor.Device) (*executor.Program, *train.StepGraph) {
	t.Helper()
	step := mustStep(t)
	prog, _ := loadStep(t, dev, step)
	return prog, step
}

func batches(step *train.StepGraph, n int) []map[string]*tensor.Tensor {
	var bs []map[string]*tensor.Tensor
	for i := range n {
		b := map[string]*tensor.Tensor{}
		for _, name := range step.Batch {
			b[name] = tensor.RandomInput(step.Graph.Lookup(name), uint64(20+i))
		}
		bs = append(bs, b)
	}
	return bs
}

// trainPrefetched runs a step per batch the way a training loop overlaps them: batch i+1 is staged
// (in a goroutine, as a data loader does) and prefetched after step i is launched and before it
// is waited for. It returns the losses and the final weights.
func trainPrefetched(t *testing.T, prog *executor.Program, step *train.StepGraph, bs []map[string]*tensor.Tensor) ([]float64, []byte) {
	t.Helper()
	staged := make(chan *executor.Staged, 1)
	go func() {
		defer close(staged)
		for _, b := range bs {
			s, err := prog.Stage(b)
			if err != nil {
				t.Error(err)
				return
			}
			staged <- s
		}
	}()
	if err := prog.Prefetch(<-staged); err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range bs {
		if err := prog.Launch(nil); err != nil {
			t.Fatal(err)
		}
		if s, ok := <-staged; ok {
			if err := prog.Prefetch(s); err != nil {
				t.Fatal(err)
			}
		}
		res, err := prog.Wait()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, res.Outputs[step.Loss].F[0])
	}
	return losses, weights(t, prog, step)
}

func weights(t *testing.T, prog *executor.Program, step *train.StepGraph) []byte {
	var all []byte
	for _, name := range step.Params {
		w, err := prog.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, w.Bytes()...)
	}
	return all
}

// Prefetched steps compute what Run computes, bit for bit, on a device with Streams and on one
// without; with Streams the program issues the upload of batch i+1 before it waits for step i,
// makes step i+1's launches wait for that upload, and orders an upload into the buffers step i
// read after step i's event.
func TestPrefetchOrderAndResults(t *testing.T) {
	bs := batches(mustStep(t), 4)
	prog, step := loadAdam(t, simdev.New(simdev.Options{}))
	var want []float64
	for _, b := range bs {
		res, err := prog.Run(b)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Outputs[step.Loss].F[0])
	}
	wantW := weights(t, prog, step)

	sd := newStreamsDev()
	for _, dev := range []executor.Device{simdev.New(simdev.Options{}), sd} {
		t.Run(fmt.Sprintf("%T", dev), func(t *testing.T) {
			prog, step := loadAdam(t, dev)
			sd.log = nil
			losses, w := trainPrefetched(t, prog, step, bs)
			if fmt.Sprint(losses) != fmt.Sprint(want) || !bytes.Equal(w, wantW) {
				t.Errorf("losses %v, want %v (weights equal: %v)", losses, want, bytes.Equal(w, wantW))
			}
		})
	}
	// e1 is the upload of batch 0; step i's launches wait for its upload and are followed by the
	// record of their event; the upload of batch i+1 comes before step i's sync, and from step 1
	// on waits for the event of step i-1, which read its buffers.
	log := strings.Join(sd.log, "\n")
	want4 := strings.Join([]string{
		"upload after e0: e1",
		"wait e1", "launch", "record e2", "upload after e0: e3", "sync",
		"wait e3", "launch", "record e4", "upload after e2: e5", "sync",
		"wait e5", "launch", "record e6", "upload after e4: e7", "sync",
		"wait e7", "launch", "record e8", "sync",
	}, "\n")
	if log != want4 {
		t.Errorf("issued:\n%s\nwant:\n%s", log, want4)
	}
	if err := prog.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustStep(t *testing.T) *train.StepGraph {
	opt := train.NewAdam()
	opt.LR = 1e-2
	step, err := train.Step("classifier", classifier, opt, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return step
}

// Misuse of the prefetch calls is an error that says what to do, and leaves the program usable.
func TestPrefetchErrors(t *testing.T) {
	dev := newStreamsDev()
	prog, step := loadAdam(t, dev)
	other, _ := loadAdam(t, newStreamsDev())
	bs := batches(step, 2)
	stage := func(b map[string]*tensor.Tensor) *executor.Staged {
		s, err := prog.Stage(b)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	expect := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	_, err := prog.Wait()
	expect(err, "no run was launched")
	_, err = prog.Stage(map[string]*tensor.Tensor{"x": bs[0]["x"]})
	expect(err, "no value for input labels")
	wrong := map[string]*tensor.Tensor{"x": bs[0]["labels"], "labels": bs[0]["labels"]}
	_, err = prog.Stage(wrong)
	expect(err, "input x is i64[8], the model wants f32[8,16]")
	s0 := stage(bs[0])
	expect(other.Prefetch(s0), "staged for another program")
	if err := prog.Prefetch(s0); err != nil {
		t.Fatal(err)
	}
	expect(prog.Prefetch(s0), "prefetched already")
	expect(prog.Prefetch(stage(bs[1])), "launch a run on them first")
	expect(prog.Launch(bs[0]), "pass nil to run on them")
	if err := prog.Launch(nil); err != nil {
		t.Fatal(err)
	}
	expect(prog.Launch(bs[1]), "not waited for")
	if _, err := prog.Wait(); err != nil {
		t.Fatal(err)
	}
	expect(prog.Launch(nil), "no value for input")
	if _, err := prog.Run(bs[1]); err != nil {
		t.Fatal(err)
	}
	if err := prog.Close(); err != nil {
		t.Fatal(err)
	}
	if len(dev.pinned) != 0 || len(dev.live) != 0 {
		t.Errorf("after Close: %d pinned buffers, %d events held", len(dev.pinned), len(dev.live))
	}
}
