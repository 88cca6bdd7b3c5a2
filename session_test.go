package gcomp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

func compileMLP(t *testing.T) *gcomp.Model {
	t.Helper()
	m, err := gcomp.Compile("mlp", mlp.Model, gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// input i is seeded random data for the mlp's x (f32[16,64]).
func input(i int) map[string]*gcomp.Tensor {
	x := tensor.RandomInput(&ir.Value{Name: "x", Type: ir.T(ir.F32, 16, 64)}, uint64(i))
	f := make([]float32, len(x.F))
	for j, v := range x.F {
		f[j] = float32(v)
	}
	return map[string]*gcomp.Tensor{"x": gcomp.Float32(f, 16, 64)}
}

func open(t *testing.T, m *gcomp.Model, opts gcomp.SessionOptions) *gcomp.Session {
	t.Helper()
	opts.InitWeights = true
	s, err := gcomp.Open(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func values(t *testing.T, out map[string]*gcomp.Tensor, name string) []float32 {
	t.Helper()
	v, err := out[name].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// One session run from 32 goroutines at once gives every caller the bits a serial run of its
// input gives, on every device (run with -race).
func TestConcurrentRuns(t *testing.T) {
	m := compileMLP(t)
	for _, dev := range []string{"ref", "sim"} {
		t.Run(dev, func(t *testing.T) {
			concurrentRuns(t, open(t, m, gcomp.SessionOptions{Device: dev, Pool: 4, NoSimChecks: true}))
		})
	}
}

// The CUDA device's path with a stream per run over one copy of the weights: 32 goroutines on a
// pool of 4 streams of the simulator-backed driver (its calls serialized, as the CUDA driver's
// are thread-safe).
func TestConcurrentRunsCUDAStreams(t *testing.T) {
	concurrentRuns(t, open(t, compileMLP(t), gcomp.SessionOptions{Device: "cuda:0", Driver: &lockedDriver{drv: simdriver.New()}, Pool: 4}))
}

// concurrentRuns runs the mlp's session s serially on 32 inputs, then on all of them at once
// from 32 goroutines, and compares.
func concurrentRuns(t *testing.T, s *gcomp.Session) {
	const callers = 32
	want := make([][]float32, callers)
	for i := range callers {
		out, err := s.Run(context.Background(), input(i))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = values(t, out, "y")
	}
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.Run(context.Background(), input(i))
			if err != nil {
				errs[i] = err
				return
			}
			if got, _ := out["y"].Float32s(); !slices.Equal(got, want[i]) {
				errs[i] = fmt.Errorf("caller %d: y differs from the serial run's", i)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// The devices agree: the simulator's kernels compute what the reference interpreter does
// (within f32 rounding of a different summation order), through the CUDA device's code path
// too (a session with two streams on the simulator-backed driver).
func TestDevicesAgree(t *testing.T) {
	m := compileMLP(t)
	in := input(1)
	run := func(opts gcomp.SessionOptions) []float32 {
		s := open(t, m, opts)
		out, err := s.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		out2, err := s.Run(context.Background(), in) // the pool's other slot, on a pool of 2
		if err != nil {
			t.Fatal(err)
		}
		a, b := values(t, out, "y"), values(t, out2, "y")
		if !slices.Equal(a, b) {
			t.Errorf("%s: two runs of one input differ", s.Device())
		}
		return a
	}
	want := run(gcomp.SessionOptions{Device: "ref"})
	sim := run(gcomp.SessionOptions{Device: "sim", Pool: 2})
	gpu := run(gcomp.SessionOptions{Device: "cuda:0", Driver: simdriver.New(), Pool: 2})
	if !slices.Equal(sim, gpu) {
		t.Errorf("sim and the CUDA path on the simulator differ")
	}
	for i := range want {
		if d := want[i] - sim[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("y[%d]: ref %v, sim %v", i, want[i], sim[i])
		}
	}
}

// countdown is a context that is done after its Err has said nil n times: it stops a run
// before its (n+1)-th kernel, deterministically.
type countdown struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *countdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// A run cancelled mid-run on the simulator stops before its second kernel, says which, and the
// session's next run is a clean one.
func TestCancelMidRun(t *testing.T) {
	m, err := gcomp.Compile("chain", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 16, 64)
		h := nn.NewLinear(b, "fc", 64, 64).Forward(x)
		b.Output("y", h.Softmax(1).Sum(1))
	}, gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kernels := m.Artifact().Plan.Kernels
	if len(kernels) < 2 {
		t.Fatalf("the model compiled to %d kernel; the test needs several", len(kernels))
	}
	s := open(t, m, gcomp.SessionOptions{Device: "sim", Pool: 1})
	in := input(3)
	want, err := s.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(&countdown{Context: context.Background(), n: 1}, in)
	var stop *gcomp.StopError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &stop) || !strings.Contains(stop.Where, kernels[1].Name+" (2 of") {
		t.Fatalf("err = %v, want a stop before kernel 2 (%s) wrapping context.Canceled", err, kernels[1].Name)
	}
	got, err := s.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(values(t, got, "y"), values(t, want, "y")) {
		t.Error("the run after a cancelled one differs from the run before it")
	}
}

// Mistakes are one typed error each, naming the input or weight.
func TestErrors(t *testing.T) {
	m := compileMLP(t)
	x := input(0)["x"]
	s := open(t, m, gcomp.SessionOptions{Device: "ref"})
	runs := []struct {
		name   string
		inputs map[string]*gcomp.Tensor
		is     error
		msg    string
	}{
		{"missing input", map[string]*gcomp.Tensor{}, gcomp.ErrMissingInput, "gcomp: no value for input x (f32[16,64])"},
		{"nil input", map[string]*gcomp.Tensor{"x": nil}, gcomp.ErrMissingInput, "gcomp: input x is nil"},
		{"unknown input", map[string]*gcomp.Tensor{"x": x, "z": x}, gcomp.ErrUnknownInput, "gcomp: the model mlp has no input z"},
		{"wrong shape", map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 64), 1, 64)}, gcomp.ErrShapeMismatch, "input x is f32[1,64], the model wants f32[16,64]"},
		{"wrong dtype", map[string]*gcomp.Tensor{"x": gcomp.Float64(make([]float64, 16*64), 16, 64)}, gcomp.ErrShapeMismatch, "input x is f64[16,64], the model wants f32[16,64]"},
		{"short slice", map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 10), 16, 64)}, gcomp.ErrShapeMismatch, "input x: its slice holds 10 elements, its shape [16 64] needs 1024"},
	}
	for _, tc := range runs {
		_, err := s.Run(context.Background(), tc.inputs)
		if !errors.Is(err, tc.is) || err.Error() != tc.msg {
			t.Errorf("%s: err = %v, want %q (%v)", tc.name, err, tc.msg, tc.is)
		}
	}
	var se *gcomp.ShapeError
	if _, err := s.Run(context.Background(), runs[3].inputs); !errors.As(err, &se) || se.Kind != "input" || se.Name != "x" || se.Want.String() != "f32[16,64]" || se.Have.String() != "f32[1,64]" {
		t.Errorf("ShapeError = %+v", se)
	}

	w := func(shape ...int) *gcomp.Tensor {
		return gcomp.Float32(make([]float32, ir.Shape(shape).NumElements()), shape...)
	}
	opens := []struct {
		name string
		opts gcomp.SessionOptions
		is   error
		msg  string
	}{
		{"unknown weight", gcomp.SessionOptions{Device: "ref", InitWeights: true, Weights: map[string]*gcomp.Tensor{"2.weight": w(1)}}, gcomp.ErrUnknownWeight, "gcomp: the model mlp has no parameter 2.weight"},
		{"missing weight", gcomp.SessionOptions{Device: "ref", Weights: map[string]*gcomp.Tensor{"0.weight": w(32, 64)}}, gcomp.ErrMissingWeight, "gcomp: no weight for parameter 0.bias (f32[32]) of the model mlp"},
		{"weight shape", gcomp.SessionOptions{Device: "ref", InitWeights: true, Weights: map[string]*gcomp.Tensor{"0.weight": w(64, 32)}}, gcomp.ErrShapeMismatch, "weight 0.weight is f32[64,32], the model wants f32[32,64]"},
		{"bad device", gcomp.SessionOptions{Device: "tpu", InitWeights: true}, gcomp.ErrNoDevice, `gcomp: unknown device "tpu" (want auto, cuda, cuda:N, sim or ref)`},
		{"no GPU", gcomp.SessionOptions{Device: "cuda:0", CUDALib: filepath.Join(t.TempDir(), "libcuda.so.1"), InitWeights: true}, gcomp.ErrNoDevice, "gcomp: device cuda:0: no CUDA driver library"},
		{"weights file", gcomp.SessionOptions{Device: "ref", WeightsFile: filepath.Join(t.TempDir(), "none.safetensors")}, nil, "none.safetensors"},
	}
	for _, tc := range opens {
		_, err := gcomp.Open(m, tc.opts)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %q (%v)", tc.name, err, tc.msg, tc.is)
		}
	}
}

// A run the reference interpreter's budget cannot hold is ErrOutOfMemory.
func TestOutOfMemory(t *testing.T) {
	s := open(t, compileMLP(t), gcomp.SessionOptions{Device: "ref"})
	ref.SetMemoryBudget(1024)
	defer ref.SetMemoryBudget(0)
	if _, err := s.Run(context.Background(), input(0)); !errors.Is(err, gcomp.ErrOutOfMemory) {
		t.Errorf("err = %v, want ErrOutOfMemory", err)
	}
}

// Runs after Close are ErrClosed; Close twice is fine.
func TestClosed(t *testing.T) {
	s, err := gcomp.Open(compileMLP(t), gcomp.SessionOptions{Device: "sim", InitWeights: true, Pool: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(s.Close(), s.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), input(0)); !errors.Is(err, gcomp.ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
}

// Weights from a safetensors file are the weights of the map they were written from, and an
// output's Float32s is the slice the device wrote (the same slice on every call).
func TestWeightsFile(t *testing.T) {
	m := compileMLP(t)
	weights := map[string]*gcomp.Tensor{}
	arrays := map[string]*tensorio.Array{}
	for _, p := range m.Graph().Params() {
		v, err := tensor.Initialize(p, 5)
		if err != nil {
			t.Fatal(err)
		}
		weights[p.Name] = gcomp.FromHost(v)
		arrays[p.Name] = v.Array()
	}
	file := filepath.Join(t.TempDir(), "w.safetensors")
	if err := tensorio.WriteSafetensorsFile(file, arrays, nil); err != nil {
		t.Fatal(err)
	}
	a := open(t, m, gcomp.SessionOptions{Device: "sim", Weights: weights, Pool: 1})
	b := open(t, m, gcomp.SessionOptions{Device: "sim", WeightsFile: file, Pool: 1})
	outA, err := a.Run(context.Background(), input(2))
	if err != nil {
		t.Fatal(err)
	}
	outB, err := b.Run(context.Background(), input(2))
	if err != nil {
		t.Fatal(err)
	}
	ya, yb := values(t, outA, "y"), values(t, outB, "y")
	if !slices.Equal(ya, yb) {
		t.Error("weights from the file and from the map give different outputs")
	}
	if again := values(t, outA, "y"); &again[0] != &ya[0] {
		t.Error("Float32s copied the output")
	}
}

// A model.go compiled from its file (through the interpreter) is the model its function
// compiles to in the program: the same PTX, byte for byte.
func TestCompileFileMatchesCompile(t *testing.T) {
	fromFile, err := gcomp.CompileFile("examples/mlp/model.go", gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inProgram := compileMLP(t)
	if string(fromFile.Artifact().PTX) != string(inProgram.Artifact().PTX) {
		t.Error("examples/mlp/model.go and mlp.Model compile to different PTX")
	}
	if _, err := gcomp.CompileFile("testdata/none.gir", gcomp.Options{}); err == nil {
		t.Error("a missing file compiled")
	}
	if _, err := gcomp.Compile("mlp", mlp.Model, gcomp.Options{Target: "sm_70"}); err == nil || !strings.Contains(err.Error(), `target "sm_70"`) {
		t.Errorf("sm_70: err = %v", err)
	}
}

// An ONNX model compiles with its batch fixed by Options.Shapes, runs on its own initializers,
// and computes PyTorch's outputs (exported by scripts/export_onnx.py).
func TestCompileONNX(t *testing.T) {
	const dir = "frontend/onnx/suite/testdata/exported/"
	x, err := tensor.ReadNPYFile(dir + "mlp_inputs/x.npy")
	if err != nil {
		t.Fatal(err)
	}
	want, err := tensor.ReadNPYFile(dir + "mlp_outputs/y.npy")
	if err != nil {
		t.Fatal(err)
	}
	m, err := gcomp.CompileFile(dir+"mlp_opset17.onnx", gcomp.Options{Shapes: map[string][]int{"x": x.Type.Shape}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"ref", "sim"} {
		s, err := gcomp.Open(m, gcomp.SessionOptions{Device: dev, Pool: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"x": gcomp.FromHost(x)})
		if err != nil {
			t.Fatal(err)
		}
		y := out[m.Outputs()[0].Name].Host()
		if !y.Type.Equal(want.Type) {
			t.Fatalf("%s: y is %s, PyTorch's %s", dev, y.Type, want.Type)
		}
		for i := range want.F {
			if d := y.F[i] - want.F[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s: y[%d] = %v, PyTorch %v", dev, i, y.F[i], want.F[i])
			}
		}
	}
}
