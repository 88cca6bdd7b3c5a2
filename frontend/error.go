package frontend

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Error is a mistake in a model: a shape or dtype mismatch, a bad dimension, an unknown or
// duplicate name. The DSL's methods panic with an *Error, the way PyTorch raises an exception;
// Build recovers it and returns it as an ordinary error. Pos is the user's source position of the
// call that failed ("model.go:17"), or empty when it is not known.
type Error struct {
	Pos string // "model.go:17", or ""
	Msg string // "matmul: inner dimensions differ: x is f32[64,784], w is f32[128,10]"
	Err error  // the kind of mistake, for errors.Is (ErrNoBatch), or nil
}

// Unwrap returns the kind of mistake, if the error has one.
func (e *Error) Unwrap() error { return e.Err }

// Error returns "Pos: Msg", or Msg alone when the position is unknown.
func (e *Error) Error() string {
	if e.Pos == "" {
		return e.Msg
	}
	return e.Pos + ": " + e.Msg
}

// PositionFunc returns the source position ("model.go:17") of the user's code that is calling
// into the DSL, or "" if it cannot tell. It is called from inside the DSL, so it may walk the
// goroutine's stack. A loader that runs model files in an interpreter supplies its own with
// WithPosition, since the Go stack then holds the interpreter's frames and not the model's.
type PositionFunc func() string

// frontendPkg is this package's import path; frames in it and in its subpackages (frontend/nn)
// are the DSL's own and never the user's position.
var frontendPkg = reflect.TypeFor[Builder]().PkgPath()

// CallerPosition is the default PositionFunc. It walks the stack past the runtime's frames and
// those of this package and its subpackages, and returns the file base name and line of the first
// frame after them. When that frame belongs to the yaegi Go interpreter, the model's own position
// is not on the Go stack, and CallerPosition returns "".
func CallerPosition() string {
	if f, ok := userFrame(); ok {
		return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
	}
	return ""
}

// userFrame is the first frame of the goroutine's stack past the runtime's and the DSL's own,
// if it is Go code with a file (not the yaegi interpreter's).
//
// Every op a model creates asks for its position, from a few call sites each run many times (a
// language model's layers), so what each return address on the stack says is symbolized once and
// kept: the frames inlined at an address, and so the verdict, never change.
// The stack is unwound 16 frames at a time (the user's frame is rarely further), up to 64.
func userFrame() (runtime.Frame, bool) {
	var pcs [64]uintptr
	for from := 0; from < len(pcs); from += 16 {
		n := runtime.Callers(3+from, pcs[from:from+16])
		for _, pc := range pcs[from : from+n] {
			v, ok := pcVerdicts.Load(pc)
			if !ok {
				v, _ = pcVerdicts.LoadOrStore(pc, verdictAt(pc))
			}
			if v := v.(pcVerdict); v.decided {
				return v.frame, v.user
			}
		}
		if n < 16 {
			break
		}
	}
	return runtime.Frame{}, false
}

// pcVerdicts maps a return address to its pcVerdict.
var pcVerdicts sync.Map

// A pcVerdict is what the frames at one return address (a call and the calls inlined into it)
// tell userFrame: nothing (all are the runtime's or the DSL's: look further), or the end of the
// walk, at the user's frame or at the interpreter (user false).
type pcVerdict struct {
	decided bool
	user    bool
	frame   runtime.Frame
}

func verdictAt(pc uintptr) pcVerdict {
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		switch pkg := funcPackage(f.Function); {
		case pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || isFrontend(pkg):
		case strings.HasPrefix(pkg, "github.com/traefik/yaegi") || pkg == "reflect":
			return pcVerdict{decided: true}
		case f.File != "":
			return pcVerdict{decided: true, user: true, frame: f}
		}
		if !more {
			return pcVerdict{}
		}
	}
}

// funcPackage returns the import path of the package of a function named as runtime.Frame names
// it, e.g. "github.com/gcomp/gcomp/frontend.(*Tensor).Add" → "github.com/gcomp/gcomp/frontend".
func funcPackage(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i]
	}
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

func isFrontend(pkg string) bool {
	return (pkg == frontendPkg || strings.HasPrefix(pkg, frontendPkg+"/")) && !strings.HasSuffix(pkg, "_test")
}

// failf panics with an *Error at the user's current position.
func (s *state) failf(format string, args ...any) {
	panic(&Error{Pos: s.pos(), Msg: fmt.Sprintf(format, args...)})
}

// asError turns a recovered panic value into an error with a position: an *Error (also wrapped
// in another error) is returned as is, anything else becomes an *Error at the position where
// it was raised.
func (s *state) asError(r any) error {
	if err, ok := r.(error); ok {
		var fe *Error
		if errors.As(err, &fe) {
			return fe
		}
	}
	return &Error{Pos: s.pos(), Msg: fmt.Sprintf("panic: %v", r)}
}
