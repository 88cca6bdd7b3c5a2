package executor

import (
	"errors"
	"fmt"

	"github.com/gcomp/gcomp/artifact"
)

// StopError is a run that its context stopped between kernels: Kernel (the Index-th of Of, from
// 0) was not launched, the ones before it were and finished. It wraps the context's error, so
// errors.Is(err, context.DeadlineExceeded) and errors.Is(err, context.Canceled) hold.
type StopError struct {
	Kernel    string
	Index, Of int
	Err       error
}

func (e *StopError) Error() string {
	return fmt.Sprintf("run stopped before kernel %s (%d of %d): %v", e.Kernel, e.Index+1, e.Of, e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }

func stopped(plan *artifact.Plan, j int, err error) error {
	name := "(none)"
	if j < len(plan.Kernels) {
		name = plan.Kernels[j].Name
	}
	return &StopError{Kernel: name, Index: j, Of: len(plan.Kernels), Err: err}
}

// drain finishes a launch its context stopped: the kernels already queued complete (Sync), the
// buffers they read are marked, and the prefetched inputs' host memory returns to the pool.
func (p *Program) drain(staged *Staged) error {
	errs := []error{p.markRead(), p.dev.Sync()}
	if staged != nil {
		p.pf.pool.put(staged.buf)
	}
	return errors.Join(errs...)
}
