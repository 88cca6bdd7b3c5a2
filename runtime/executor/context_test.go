package executor_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"testing"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// chain is a graph of several kernels (a matmul, then a row reduction the subtraction needs).
const chain = `graph chain {
  input %x : f32[4,8]
  param %w : f32[8,8] {init="normal"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %1 = reduce_max(%0) {axes=[1]} : f32[4]
  %2 = broadcast_in_dim(%1) {dims=[0], shape=[4,8]} : f32[4,8]
  %3 = sub(%0, %2) : f32[4,8]
  output y = %3
}
`

// chainProgram compiles chain, loads it on dev with seeded weights and returns it with an input.
func chainProgram(t *testing.T, dev executor.Device) (*executor.Program, map[string]*tensor.Tensor) {
	t.Helper()
	g, err := ir.Parse("chain.gir", []byte(chain))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Artifact.Plan.Kernels); n < 2 {
		t.Fatalf("chain compiled to %d kernel; the test needs several", n)
	}
	p, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	in, params, err := tensor.SeededValues(g, 7)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	return p, in
}

// cancelling is a device whose modules call cancel after their first launch: the context of
// the run is done while the run is between its first and second kernels.
type cancelling struct {
	executor.Device
	cancel func()
}

func (d *cancelling) Load(ptx []byte) (executor.Module, error) {
	m, err := d.Device.Load(ptx)
	return &cancellingModule{Module: m, cancel: d.cancel}, err
}

type cancellingModule struct {
	executor.Module
	cancel func()
}

func (m *cancellingModule) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	c, err := m.Module.Launch(kernel, cfg, args)
	m.cancel()
	return c, err
}

// A run whose context is cancelled mid-run stops before the next kernel, says which, wraps
// context.Canceled, and leaves the program ready: the next run's outputs are a clean run's.
func TestRunContextCancelledMidRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dev := &cancelling{Device: simdev.New(simdev.Options{}), cancel: cancel}
	p, in := chainProgram(t, dev)
	_, err := p.RunContext(ctx, in)
	var stop *executor.StopError
	if !errors.As(err, &stop) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a *StopError wrapping context.Canceled", err)
	}
	if stop.Index != 1 || stop.Kernel != p.Plan().Kernels[1].Name || stop.Of != len(p.Plan().Kernels) {
		t.Errorf("stopped at %+v, want before kernel 1 (%s)", stop, p.Plan().Kernels[1].Name)
	}
	got, err := p.Run(in)
	if err != nil {
		t.Fatalf("the run after a cancelled one: %v", err)
	}
	want := cleanRun(t, in)
	if !bytes.Equal(got.Outputs["y"].Bytes(), want) {
		t.Errorf("after a cancelled run: y = %v, a clean run gives other bits", got.Outputs["y"].F)
	}
}

func cleanRun(t *testing.T, in map[string]*tensor.Tensor) []byte {
	t.Helper()
	p, _ := chainProgram(t, simdev.New(simdev.Options{}))
	res, err := p.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return res.Outputs["y"].Bytes()
}

// A context past its deadline stops the run before its first kernel.
func TestRunContextDeadline(t *testing.T) {
	p, in := chainProgram(t, simdev.New(simdev.Options{}))
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for name, run := range map[string]func() error{
		"RunContext": func() error { _, err := p.RunContext(ctx, in); return err },
		"RunImages": func() error {
			_, err := p.RunImages(ctx, map[string]executor.Image{"x": {Type: in["x"].Type, Data: in["x"].Bytes()}}, nil)
			return err
		},
	} {
		err := run()
		var stop *executor.StopError
		if !errors.As(err, &stop) || !errors.Is(err, context.DeadlineExceeded) || stop.Index != 0 {
			t.Errorf("%s: err = %v, want a stop before kernel 0 wrapping context.DeadlineExceeded", name, err)
		}
	}
}

// RunImages computes Run's bits from memory images, and checks what it is given.
func TestRunImages(t *testing.T) {
	p, in := chainProgram(t, simdev.New(simdev.Options{}))
	want := cleanRun(t, in)
	x := executor.Image{Type: in["x"].Type, Data: in["x"].Bytes()}
	y := make([]byte, len(want))
	if _, err := p.RunImages(context.Background(), map[string]executor.Image{"x": x}, map[string][]byte{"y": y}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(y, want) {
		t.Errorf("RunImages wrote %x, Run gives %x", y, want)
	}
	bad := []struct {
		name string
		in   map[string]executor.Image
		out  map[string][]byte
		want string
	}{
		{"short image", map[string]executor.Image{"x": {Type: x.Type, Data: x.Data[1:]}}, nil, "input x: f32[4,8] needs 128 bytes, have 127"},
		{"wrong type", map[string]executor.Image{"x": {Type: ir.T(ir.F32, 8, 4), Data: x.Data}}, nil, "input x is f32[8,4], the model wants f32[4,8]"},
		{"missing input", map[string]executor.Image{}, nil, "no value for input x"},
		{"unknown output", map[string]executor.Image{"x": x}, map[string][]byte{"z": y}, "the model has no output named [z]"},
		{"output size", map[string]executor.Image{"x": x}, map[string][]byte{"y": y[:4]}, "output y: f32[4,8] needs 128 bytes, the memory given has 4"},
	}
	for _, tc := range bad {
		_, err := p.RunImages(context.Background(), tc.in, tc.out)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Programs sharing parameters on two streams of one CUDA context (here the simulator-backed
// driver) hold one copy of the weights and compute what the first program computes.
func TestShare(t *testing.T) {
	drv := simdriver.New()
	open := func() *cuda.Device {
		d, err := cuda.Open(drv, 0, cuda.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	d1, d2 := open(), open()
	p1, in := chainProgram(t, d1)
	if err := d1.Sync(); err != nil {
		t.Fatal(err)
	}
	p2, err := p1.Share(d2)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if m := p2.Memory(); m.ParamBytes != 0 || p1.Memory().ParamBytes == 0 {
		t.Errorf("the sharing program holds %d parameter bytes, the first %d; want 0 and the weights'", m.ParamBytes, p1.Memory().ParamBytes)
	}
	want := cleanRun(t, in)
	for i, p := range []*executor.Program{p1, p2, p1} {
		res, err := p.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.Outputs["y"].Bytes(), want) {
			t.Errorf("run %d: outputs differ from the simulator's", i)
		}
	}
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d2.Stats().Allocated; n != 0 {
		t.Errorf("%d bytes still allocated on the second stream's device after Close", n)
	}
	// On the simulator a freed weight buffer would fail the next run as out of bounds.
	if _, err := p1.Run(in); err != nil {
		t.Fatalf("closing the sharing program freed the weights: %v", err)
	}
}
