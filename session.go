package gcomp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/gcomp/gcomp/internal/memlimit"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// SessionOptions say where a session runs and with which weights.
type SessionOptions struct {
	// Device is "auto" (the default: the first usable GPU, else the simulator), "cuda:N" (GPU
	// N; "cuda" is cuda:0), "sim" (the PTX simulator) or "ref" (the reference interpreter on
	// the source graph).
	Device string
	// Weights are parameter values by name; WeightsFile is a safetensors file of them. Where
	// both name a parameter, Weights wins. Every value must have its parameter's dtype and
	// shape, and every name must be a parameter.
	Weights     map[string]*Tensor
	WeightsFile string
	// An ONNX model's initializers are the weights of the parameters neither names.
	// InitWeights gives each parameter still without a weight the model's initializer drawn
	// with Seed (what gcomp run does); without it such a parameter is an ErrMissingWeight.
	InitWeights bool
	Seed        uint64
	// Pool is how many runs may be in flight at once (further Runs wait for one to finish);
	// 0 is runtime.GOMAXPROCS(0), more than MaxPool an error. On a GPU each has its own stream, I/O buffers and memory-plan
	// arena, all reading one copy of the weights; on the simulator each has a simulated device
	// of its own; on ref they share the weights' host tensors.
	Pool int
	// NoSimChecks runs the simulator without memcheck, racecheck and synccheck (faster).
	NoSimChecks bool
	// CUDALib is the CUDA driver library to load (default $GCOMP_CUDA_LIB, else libcuda.so.1);
	// Driver, when set, is used instead (runtime/cuda/simdriver runs the CUDA path on the
	// simulator).
	CUDALib string
	Driver  cuda.Driver
}

// MaxPool bounds SessionOptions.Pool: each run in flight holds a device stream, buffers and an
// arena (a whole simulated device on sim), so a pool in the millions would exhaust the host's
// memory before the first run.
const MaxPool = 1024

// Session is a model opened on a device with its weights. It is safe for concurrent use: Run
// may be called from many goroutines, and up to SessionOptions.Pool runs proceed at once.
type Session struct {
	model  *Model
	spec   device.Spec
	name   string
	params map[string]*tensor.Tensor // ref's weights
	free   chan *slot
	slots  []*slot
	sizes  *ir.Graph // binds a run's sizes (dims.go); nil for a static model

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// slot is the state of one run in flight: on a compiled device its program (own buffers and
// arena) and the device (own stream) it runs on; on ref nothing.
type slot struct {
	prog *executor.Program
	dev  executor.Device
}

// Open opens a session on m. The weights are checked against the model's parameters (names,
// dtypes, shapes) and, on a compiled device, copied to it once.
func Open(m *Model, opts SessionOptions) (*Session, error) {
	if m == nil {
		return nil, errors.New("gcomp: Open: the model is nil")
	}
	if opts.Pool > MaxPool {
		return nil, fmt.Errorf("gcomp: Open: a pool of %d runs in flight, more than MaxPool (%d)", opts.Pool, MaxPool)
	}
	if opts.Device == "" {
		opts.Device = "auto"
	}
	spec, err := device.Parse(opts.Device)
	if err != nil {
		return nil, &wrapped{err: fmt.Errorf("gcomp: %v", err), sentinel: ErrNoDevice}
	}
	if opts.Pool <= 0 {
		opts.Pool = runtime.GOMAXPROCS(0)
	}
	switch spec.Kind { // before the weights are read and converted
	case device.Sim:
		if err := m.checkSimPool(opts.Pool); err != nil {
			return nil, err
		}
	case device.Ref:
		if err := ref.CheckBound(m.graph); err != nil { // ref.SetMemoryBudget's, when set
			return nil, deviceError(err)
		}
	}
	params, err := m.weights(opts)
	if err != nil {
		return nil, err
	}
	s := &Session{model: m, spec: spec, free: make(chan *slot, opts.Pool), sizes: m.sizesGraph()}
	if spec.Kind == device.Ref {
		s.name, s.params = "ref (reference interpreter)", params
		for range opts.Pool {
			s.slots = append(s.slots, &slot{})
		}
	} else if err := s.openCompiled(opts, params); err != nil {
		s.release()
		return nil, deviceError(err)
	}
	for _, sl := range s.slots {
		s.free <- sl
	}
	return s, nil
}

// openCompiled fills the pool on a GPU or the simulator.
func (s *Session) openCompiled(opts SessionOptions, params map[string]*tensor.Tensor) error {
	devOpts := device.Options{CUDALib: opts.CUDALib, Driver: opts.Driver, Sim: func() (executor.Device, error) {
		return simdev.New(simdev.Options{NoCheck: opts.NoSimChecks}), nil
	}}
	sel, err := device.Open(opts.Device, devOpts)
	if err != nil {
		return &wrapped{err: fmt.Errorf("gcomp: %w", err), sentinel: ErrNoDevice}
	}
	s.spec, s.name = sel.Spec, sel.Device.Name()
	if s.spec.Kind == device.Sim { // "auto" on a machine without a GPU
		if err := s.model.checkSimPool(cap(s.free)); err != nil {
			sel.Device.Close()
			return err
		}
	}
	first := &slot{dev: sel.Device}
	s.slots = append(s.slots, first)
	if first.prog, err = executor.Load(sel.Device, s.model.art); err != nil {
		return err
	}
	if err := first.prog.SetParams(params); err != nil {
		return err
	}
	if err := sel.Device.Sync(); err != nil { // the weights are in place before other streams read them
		return err
	}
	for len(s.slots) < cap(s.free) {
		// Each further run gets a device of its own: on a GPU another stream of the same
		// context, sharing the first program's weights; on the simulator a separate device.
		more, err := device.Open(s.spec.String(), devOpts)
		if err != nil {
			return err
		}
		sl := &slot{dev: more.Device}
		s.slots = append(s.slots, sl)
		if s.spec.Kind == device.CUDA {
			sl.prog, err = first.prog.Share(more.Device)
		} else if sl.prog, err = executor.Load(more.Device, s.model.art); err == nil {
			err = sl.prog.SetParams(params)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSimPool refuses a pool of simulated devices that would not fit half the memory the
// process may use: each holds the weights, the arena and the buffers in host memory.
func (m *Model) checkSimPool(pool int) error {
	slot := m.deviceBytes()
	if limit := memlimit.Default(); slot > 0 && int64(pool) > limit/slot {
		return errorf(ErrOutOfMemory, "gcomp: Open: a pool of %d simulated devices of %d bytes each (weights, arena, buffers) is more than the %d bytes the pool may hold (half the memory this process may use)", pool, slot, limit)
	}
	return nil
}

// deviceBytes is what one program of m holds on its device: the parameters, inputs and outputs,
// the memory plan's arena, the scratch and error areas.
func (m *Model) deviceBytes() int64 {
	p := m.art.Plan
	n := p.ArenaBytes + p.ScratchBytes + p.ErrorBytes
	for _, v := range m.graph.Values {
		if v.Op == ir.OpInput || v.Op == ir.OpParam {
			n += int64(v.Type.Bytes())
		}
	}
	for _, o := range m.graph.Outputs {
		n += int64(o.Value.Type.Bytes())
	}
	return n
}

// weights are the parameter values opts give, checked against the model's parameters.
func (m *Model) weights(opts SessionOptions) (map[string]*tensor.Tensor, error) {
	given := map[string]*Tensor{}
	if opts.WeightsFile != "" {
		file, err := readSafetensors(opts.WeightsFile)
		if err != nil {
			return nil, err
		}
		maps.Copy(given, file)
	}
	maps.Copy(given, opts.Weights)
	declared := map[string]*ir.Value{}
	for _, p := range m.graph.Params() {
		declared[p.Name] = p
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		p := declared[name]
		if p == nil {
			return nil, errorf(ErrUnknownWeight, "gcomp: the model %s has no parameter %s", m.graph.Name, name)
		}
		if err := checkTensor("weight", name, given[name], p.Type); err != nil {
			return nil, err
		}
	}
	params := map[string]*tensor.Tensor{}
	for _, p := range m.graph.Params() {
		if t := given[p.Name]; t != nil {
			params[p.Name] = t.Host()
			continue
		}
		initial, err := m.initial.Tensor(p.Name) // an ONNX initializer, converted only when used
		if err != nil {
			return nil, err
		}
		switch {
		case initial != nil:
			params[p.Name] = initial
		case !opts.InitWeights:
			return nil, errorf(ErrMissingWeight, "gcomp: no weight for parameter %s (%s) of the model %s", p.Name, p.Type, m.graph.Name)
		default:
			init, err := tensor.Initialize(p, opts.Seed)
			if err != nil {
				return nil, err
			}
			params[p.Name] = init
		}
	}
	return params, nil
}

// checkTensor checks a tensor given for an input or weight of type want. An input of a symbolic
// type may have any sizes of its dtype and rank: the run binds them (Session.bindSizes).
func checkTensor(kind, name string, t *Tensor, want ir.Type) error {
	if t == nil {
		missing := ErrMissingInput
		if kind == "weight" {
			missing = ErrMissingWeight
		}
		return errorf(missing, "gcomp: %s %s is nil", kind, name)
	}
	if !t.typ.Equal(want) && !(kind == "input" && sameRank(t.typ, want)) {
		return &ShapeError{Kind: kind, Name: name, Want: want, Have: t.typ}
	}
	return t.check(kind, name)
}

// Model is the session's model.
func (s *Session) Model() *Model { return s.model }

// Device describes where the session runs: "sim (PTX simulator)", "cuda:0 (NVIDIA H100 ...)",
// "ref (reference interpreter)".
func (s *Session) Device() string { return s.name }

// Run runs the model once on inputs, one tensor per model input by name, and returns every
// output by name. ctx is checked between kernels (between graph nodes on ref) and while
// waiting for a free slot of the pool; a run it stops returns a *StopError wrapping ctx.Err().
// Outputs with a Go element type are views over fresh slices (Float32s returns the slice the
// device wrote, no copy).
func (s *Session) Run(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	switch {
	case s == nil:
		return nil, errors.New("gcomp: Run on a nil session")
	case ctx == nil:
		return nil, errors.New("gcomp: Run: the context is nil (use context.Background())")
	}
	if err := s.checkInputs(inputs); err != nil {
		return nil, err
	}
	inputs = s.model.graphInputs(inputs)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()
	var sl *slot
	select {
	case sl = <-s.free: // a free slot first, so that a done context stops the run at a kernel
	default:
		select {
		case sl = <-s.free:
		case <-ctx.Done():
			return nil, &StopError{Where: "its first kernel (waiting for a free slot of the session's pool)", Err: ctx.Err()}
		}
	}
	defer func() { s.free <- sl }()
	var outs map[string]*Tensor
	var err error
	if sl.prog == nil {
		outs, err = s.runRef(ctx, inputs)
	} else {
		outs, err = s.runCompiled(ctx, sl.prog, inputs)
	}
	if err != nil {
		return nil, err
	}
	return s.model.userOutputs(outs), nil
}

func (s *Session) checkInputs(inputs map[string]*Tensor) error {
	declared := map[string]bool{}
	for _, v := range s.model.graph.Inputs() {
		name := s.model.inputName(v)
		declared[name] = true
		t, ok := inputs[name]
		if !ok {
			return errorf(ErrMissingInput, "gcomp: no value for input %s (%s)", name, v.Type)
		}
		if err := checkTensor("input", name, t, v.Type); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if !declared[name] {
			return errorf(ErrUnknownInput, "gcomp: the model %s has no input %s", s.model.graph.Name, name)
		}
	}
	return s.bindSizes(inputs)
}

func (s *Session) runRef(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	host := make(map[string]*tensor.Tensor, len(inputs))
	for name, t := range inputs {
		host[name] = t.Host()
	}
	outs, err := ref.RunContext(ctx, s.model.graph, host, s.params)
	if err != nil {
		return nil, deviceError(err)
	}
	res := make(map[string]*Tensor, len(outs))
	for name, t := range outs {
		res[name] = FromHost(t)
	}
	return res, nil
}

func (s *Session) runCompiled(ctx context.Context, p *executor.Program, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	if s.sizes != nil {
		return runSized(ctx, p, inputs)
	}
	images := make(map[string]executor.Image, len(inputs))
	for name, t := range inputs {
		images[name] = executor.Image{Type: t.typ, Data: t.image()}
	}
	res := map[string]*Tensor{}
	mem := map[string][]byte{}
	for _, o := range s.model.graph.Outputs {
		res[o.Name], mem[o.Name] = newOutput(o.Value.Type)
	}
	if _, err := p.RunImages(ctx, images, mem); err != nil {
		return nil, deviceError(err)
	}
	for name, t := range res {
		if err := t.finish(mem[name]); err != nil {
			return nil, fmt.Errorf("gcomp: output %s: %v", name, err)
		}
	}
	return res, nil
}

// Close waits for the runs in flight, then frees the session's device memory and devices. Runs
// after Close return ErrClosed.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.running.Wait()
	return s.release()
}

// release closes the programs (those sharing the first one's weights before it), then the
// devices.
func (s *Session) release() error {
	var errs []error
	for i := len(s.slots) - 1; i >= 0; i-- {
		if p := s.slots[i].prog; p != nil {
			errs = append(errs, p.Close())
		}
	}
	for _, sl := range s.slots {
		if sl.dev != nil {
			errs = append(errs, sl.dev.Close())
		}
	}
	return errors.Join(errs...)
}

// readSafetensors reads a weights file as tensors by name.
func readSafetensors(path string) (map[string]*Tensor, error) {
	arrays, _, err := tensorio.ReadSafetensorsFile(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Tensor, len(arrays))
	for name, a := range arrays {
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %v", path, name, err)
		}
		out[name] = FromHost(t)
	}
	return out, nil
}
