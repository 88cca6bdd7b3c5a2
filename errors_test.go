package gcomp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
)

// Each device's own errors become the API's: out of memory on CUDA, the simulator and ref is
// ErrOutOfMemory (the message kept), a stopped run a *StopError naming where.
func TestDeviceError(t *testing.T) {
	cudaOOM := fmt.Errorf("allocating the arena: %w", &cuda.Error{Call: "cuMemAlloc", Code: cuda.ResultOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY"})
	tests := []struct {
		err error
		is  error
		msg string
	}{
		{fmt.Errorf("allocating the arena: %w", fmt.Errorf("sim: %w allocating 8 bytes", sim.ErrOutOfMemory)), ErrOutOfMemory, "allocating the arena: sim: out of device memory allocating 8 bytes"},
		{cudaOOM, ErrOutOfMemory, cudaOOM.Error()},
		{fmt.Errorf("x: %w", ref.ErrMemoryBudget), ErrOutOfMemory, "x: the reference interpreter's memory budget is exhausted"},
		{&executor.StopError{Kernel: "k1_softmax", Index: 1, Of: 3, Err: context.DeadlineExceeded}, context.DeadlineExceeded, "run stopped before kernel k1_softmax (2 of 3): context deadline exceeded"},
		{&ref.StopError{Node: "m.go:3: %0 = neg(%x) : f32[4]", Err: context.Canceled}, context.Canceled, "run stopped before node m.go:3: %0 = neg(%x) : f32[4]: context canceled"},
	}
	for _, tc := range tests {
		err := deviceError(tc.err)
		if !errors.Is(err, tc.is) || err.Error() != tc.msg {
			t.Errorf("deviceError(%v) = %v, want %q matching %v", tc.err, err, tc.msg, tc.is)
		}
	}
	if err := deviceError(cudaOOM); cuda.CodeOf(err) != cuda.ResultOutOfMemory {
		t.Error("the CUDA error is no longer in the chain")
	}
}
