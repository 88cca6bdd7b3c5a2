package ref

import (
	"context"
	"errors"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

const chainGraph = `graph chain {
  input %x : f32[100]
  %0 = neg(%x) : f32[100]
  %1 = abs(%0) : f32[100]
  output y = %1
}
`

// A done context stops the run before the first node that computes, named in the error, which
// wraps the context's error.
func TestRunContextStops(t *testing.T) {
	g, err := ir.Parse("chain.gir", []byte(chainGraph))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 100))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = RunContext(ctx, g, in, nil)
	want := "chain.gir:3: %0 = neg(%x) : f32[100]: run stopped before this node: context canceled"
	if !errors.Is(err, context.Canceled) || err.Error() != want {
		t.Errorf("err = %v, want %q wrapping context.Canceled", err, want)
	}
	if _, err := RunContext(context.Background(), g, in, nil); err != nil {
		t.Errorf("a live context: %v", err)
	}
}

// A run over the memory budget is ErrMemoryBudget to errors.Is.
func TestBudgetErrorIs(t *testing.T) {
	g, err := ir.Parse("chain.gir", []byte(chainGraph))
	if err != nil {
		t.Fatal(err)
	}
	defer SetMemoryBudget(0)
	SetMemoryBudget(1000)
	_, err = Run(g, map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 100))}, nil)
	if !errors.Is(err, ErrMemoryBudget) {
		t.Errorf("err = %v, want ErrMemoryBudget", err)
	}
}
