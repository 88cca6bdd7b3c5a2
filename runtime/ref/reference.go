package ref

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// A custom op's semantics is a Go function of the model's, which may never return. It runs aside
// and Run waits for it at most the reference timeout. A Go function cannot be stopped from
// outside: one that times out is left running (its result, if it ever comes, is dropped), and
// the run fails at once with an error naming the op.

// DefaultReferenceTimeout is how long Run waits for a custom op's reference function.
const DefaultReferenceTimeout = time.Minute

var referenceTimeout atomic.Int64 // nanoseconds; 0: DefaultReferenceTimeout

// SetReferenceTimeout bounds how long Run waits for a custom op's Go reference function; 0
// restores DefaultReferenceTimeout.
func SetReferenceTimeout(d time.Duration) { referenceTimeout.Store(int64(d)) }

// ReferenceTimeout is the bound SetReferenceTimeout set.
func ReferenceTimeout() time.Duration {
	if d := time.Duration(referenceTimeout.Load()); d > 0 {
		return d
	}
	return DefaultReferenceTimeout
}

// evalCustom runs the custom op v (eval's work) under the reference timeout and ctx.
func evalCustom(ctx context.Context, g *ir.Graph, v *ir.Value, args []*tensor.Tensor) (*tensor.Tensor, error) {
	type result struct {
		t   *tensor.Tensor
		err error
	}
	done := make(chan result, 1) // buffered: a reference that returns late does not block
	go func() {
		t, err := eval(g, v, args)
		done <- result{t, err}
	}()
	d := ReferenceTimeout()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.t, r.err
	case <-timer.C:
		return nil, fmt.Errorf("%s: custom op %q: its Go reference function did not return within %v (it is left running: a Go function cannot be stopped)",
			g.FormatAt(v), v.Attrs.String("name", ""), d)
	case <-ctx.Done():
		return nil, &StopError{Node: g.FormatAt(v), Err: ctx.Err()}
	}
}

func isCustom(v *ir.Value) bool { return v.Op == ops.CustomOp }
