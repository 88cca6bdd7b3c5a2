package gcomp

import (
	"errors"
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
)

// The errors a program can act on, matched with errors.Is. Errors of a run its context stopped
// wrap the context's error (context.Canceled, context.DeadlineExceeded) and name where the run
// stopped (*StopError).
var (
	// ErrShapeMismatch: an input or weight has another dtype or shape than the model's, or a
	// view's slice does not hold its shape's elements (*ShapeError says which); for a model with
	// dims, an input's size outside its dim's range or inputs that disagree on a dim (the error
	// names the input, the dim and the range).
	ErrShapeMismatch = errors.New("shape mismatch")
	// ErrMissingInput: a run was not given every input of the model.
	ErrMissingInput = errors.New("missing input")
	// ErrUnknownInput: a run was given a tensor the model has no input for.
	ErrUnknownInput = errors.New("unknown input")
	// ErrMissingWeight: a session was opened without a value for a parameter of the model (and
	// without InitWeights).
	ErrMissingWeight = errors.New("missing weight")
	// ErrUnknownWeight: the weights hold a tensor the model has no parameter for.
	ErrUnknownWeight = errors.New("unknown weight")
	// ErrOutOfMemory: the device (a GPU's memory, the simulator's limit, the reference
	// interpreter's budget) could not hold the model or a run.
	ErrOutOfMemory = errors.New("out of device memory")
	// ErrNoDevice: the device asked for does not exist or does not open (no GPU, no driver).
	ErrNoDevice = errors.New("no such device")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session closed")
)

// ShapeError is an input or weight whose type is not the model's. It matches ErrShapeMismatch.
type ShapeError struct {
	Kind string  // "input" or "weight"
	Name string  // the input's or parameter's name
	Want ir.Type // what the model declares
	Have ir.Type // what was given (zero when Elements says what is wrong)
	// Elements, when Have is zero, is how many elements a view's slice holds where its own
	// shape (Want) needs another count.
	Elements int
}

func (e *ShapeError) Error() string {
	if e.Have.DType == 0 && e.Have.Shape == nil {
		return fmt.Sprintf("%s %s: its slice holds %d elements, its shape %v needs %d", e.Kind, e.Name, e.Elements, []int(e.Want.Shape), e.Want.Shape.NumElements())
	}
	return fmt.Sprintf("%s %s is %s, the model wants %s", e.Kind, e.Name, e.Have, e.Want)
}

func (e *ShapeError) Is(target error) bool { return target == ErrShapeMismatch }

// StopError is a run its context stopped: Where names the kernel (on a compiled device) or
// graph node (on ref) it stopped before. It wraps the context's error.
type StopError struct {
	Where string
	Err   error
}

func (e *StopError) Error() string { return "run stopped before " + e.Where + ": " + e.Err.Error() }
func (e *StopError) Unwrap() error { return e.Err }

// nameError is an error about one named input or weight that matches a sentinel.
type nameError struct {
	sentinel error
	msg      string
}

func (e *nameError) Error() string        { return e.msg }
func (e *nameError) Is(target error) bool { return target == e.sentinel }

func errorf(sentinel error, format string, args ...any) error {
	return &nameError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

// deviceError gives a device's error the sentinel it stands for, keeping its message and chain.
func deviceError(err error) error {
	if err == nil {
		return nil
	}
	var stop *executor.StopError
	if errors.As(err, &stop) {
		return &StopError{Where: fmt.Sprintf("kernel %s (%d of %d)", stop.Kernel, stop.Index+1, stop.Of), Err: stop.Err}
	}
	var refStop *ref.StopError
	if errors.As(err, &refStop) {
		return &StopError{Where: "node " + refStop.Node, Err: refStop.Err}
	}
	switch {
	case errors.Is(err, sim.ErrOutOfMemory), errors.Is(err, ref.ErrMemoryBudget), cuda.CodeOf(err) == cuda.ResultOutOfMemory:
		return &wrapped{err: err, sentinel: ErrOutOfMemory}
	}
	return err
}

// wrapped is err, matching sentinel as well as err's own chain.
type wrapped struct {
	err, sentinel error
}

func (e *wrapped) Error() string   { return e.err.Error() }
func (e *wrapped) Unwrap() []error { return []error{e.err, e.sentinel} }
