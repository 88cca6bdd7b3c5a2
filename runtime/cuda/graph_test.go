package cuda_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// A replayed CUDA graph computes what direct launches compute: each fast example runs through the
// CUDA device over the simulator-backed driver twice with graphs (the first run records and
// replays, the second replays) and gives the bytes the run without graphs gave.
func TestGraphReplayMatchesLaunches(t *testing.T) {
	for _, m := range examples.Tutorials {
		if m.Slow || testing.Short() && m.Name != "mlp" {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			drv := simdriver.New()
			dev, err := cuda.Open(drv, 0, cuda.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			prog, a := runExample(t, dev, m.Name, m.Model, ptx.Target{SM: 90}) // checked against the reference
			b := map[string]*tensor.Tensor{}                                   // other inputs: a replay that runs nothing keeps the last outputs
			for name, x := range a {
				y := x.Clone()
				for i := range y.F {
					y.F[i] = y.F[i]/2 + 0.25
				}
				b[name] = y
			}
			var direct [2]*executor.Result
			for i, in := range []map[string]*tensor.Tensor{a, b} {
				var err error
				if direct[i], err = prog.Run(in); err != nil {
					t.Fatal(err)
				}
			}
			if !prog.UseGraphs(true) {
				t.Fatal("the CUDA device does not record graphs")
			}
			for i, in := range []map[string]*tensor.Tensor{a, b} {
				got, err := prog.Run(in)
				if err != nil {
					t.Fatalf("run %d with graphs: %v", i, err)
				}
				for name, want := range direct[i].Outputs {
					if !bytes.Equal(got.Outputs[name].Bytes(), want.Bytes()) {
						t.Errorf("run %d with graphs: output %s differs from the direct launches'", i, name)
					}
				}
				if len(got.Kernels) != len(direct[i].Kernels) {
					t.Errorf("run %d: %d kernels reported, want %d", i, len(got.Kernels), len(direct[i].Kernels))
				}
			}
			if n := drv.GraphLaunches(); n != 2 {
				t.Errorf("%d graph launches for two runs, want 2", n)
			}
		})
	}
}

// Capture follows the driver's rules: recorded work does not run until the graph is launched; a
// synchronization during a capture fails and invalidates it; ending a capture that was not begun,
// beginning one twice and launching an unknown graph fail with the driver's codes.
func TestSimDriverCapture(t *testing.T) {
	drv := simdriver.New()
	st, _ := drv.StreamCreate()
	p, err := drv.MemAlloc(256)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.MemcpyHtoD(p, bytes.Repeat([]byte{7}, 256)); err != nil {
		t.Fatal(err)
	}
	code := func(err error) cuda.Result {
		var e *cuda.Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v, want a driver error", err)
		}
		return e.Code
	}
	if err := drv.StreamBeginCapture(st); err != nil {
		t.Fatal(err)
	}
	if c := code(drv.StreamBeginCapture(st)); c != cuda.ResultIllegalState {
		t.Errorf("second begin: code %d, want %d", c, cuda.ResultIllegalState)
	}
	if err := drv.MemsetD8Async(p, 0, 256, st); err != nil {
		t.Fatal(err)
	}
	g, err := drv.StreamEndCapture(st)
	if err != nil {
		t.Fatal(err)
	}
	read := func() []byte {
		b := make([]byte, 256)
		if err := drv.MemcpyDtoH(b, p); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := read(); b[0] != 7 {
		t.Fatalf("the captured memset ran at capture: %d", b[0])
	}
	exec, err := drv.GraphInstantiate(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.GraphLaunch(exec, st); err != nil {
		t.Fatal(err)
	}
	if err := drv.StreamSynchronize(st); err != nil {
		t.Fatal(err)
	}
	if b := read(); !bytes.Equal(b, make([]byte, 256)) {
		t.Fatalf("the replayed memset did not run: %d", b[0])
	}

	// A synchronization inside a capture.
	if err := drv.StreamBeginCapture(st); err != nil {
		t.Fatal(err)
	}
	if c := code(drv.StreamSynchronize(st)); c != cuda.ResultCaptureUnsupported {
		t.Errorf("sync while capturing: code %d, want %d", c, cuda.ResultCaptureUnsupported)
	}
	if _, err := drv.StreamEndCapture(st); code(err) != cuda.ResultCaptureInvalidated {
		t.Errorf("end of an invalidated capture: %v, want code %d", err, cuda.ResultCaptureInvalidated)
	}
	if _, err := drv.StreamEndCapture(st); code(err) != cuda.ResultIllegalState {
		t.Errorf("end without begin: %v, want code %d", err, cuda.ResultIllegalState)
	}
	if c := code(drv.GraphLaunch(exec+1, st)); c != cuda.ResultInvalidHandle {
		t.Errorf("unknown graph: code %d, want %d", c, cuda.ResultInvalidHandle)
	}
	if err := drv.GraphExecDestroy(exec); err != nil {
		t.Fatal(err)
	}
	if c := code(drv.GraphLaunch(exec, st)); c != cuda.ResultInvalidHandle {
		t.Errorf("destroyed graph: code %d, want %d", c, cuda.ResultInvalidHandle)
	}
}
