package gcomp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/internal/memlimit"
	"github.com/gcomp/gcomp/runtime/ref"
)

// The library's entry points given nil (a model, a graph, a context, a host tensor) or a pool
// the host cannot hold return one error each, never a panic that takes the caller's program
// down.
func TestNilArguments(t *testing.T) {
	m := compileMLP(t)
	s := open(t, m, gcomp.SessionOptions{Device: "ref", Pool: 1})
	noInput := input(0)
	noInput["x"] = gcomp.FromHost(nil)
	var nilSession *gcomp.Session
	for _, tc := range []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"Open(nil)", func() error { _, err := gcomp.Open(nil, gcomp.SessionOptions{}); return err }, "gcomp: Open: the model is nil", nil},
		{"CompileGraph(nil)", func() error { _, err := gcomp.CompileGraph(nil, gcomp.Options{}); return err }, "gcomp: CompileGraph: the graph is nil", nil},
		{"Compile(nil build)", func() error { _, err := gcomp.Compile("m", nil, gcomp.Options{}); return err }, "gcomp: Compile m: the build function is nil", nil},
		{"Run(nil context)", func() error {
			_, err := s.Run(nil, input(0))
			return err
		}, "gcomp: Run: the context is nil", nil},
		{"nil session", func() error { _, err := nilSession.Run(context.Background(), input(0)); return err }, "gcomp: Run on a nil session", nil},
		{"FromHost(nil) input", func() error { _, err := s.Run(context.Background(), noInput); return err }, "gcomp: input x is nil", gcomp.ErrMissingInput},
		{"FromHost(nil) weight", func() error {
			_, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", Weights: map[string]*gcomp.Tensor{"0.weight": gcomp.FromHost(nil)}})
			return err
		}, "gcomp: weight 0.weight is nil", gcomp.ErrMissingWeight},
		{"Values(nil)", func() error { _, err := gcomp.FromHost(nil).Float32s(); return err }, "gcomp: Values of a nil tensor", nil},
		{"pool 1<<40 on ref", func() error {
			_, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", Pool: 1 << 40, InitWeights: true})
			return err
		}, "gcomp: Open: a pool of 1099511627776 runs in flight, more than MaxPool (1024)", nil},
		{"pool 1e6 on sim", func() error {
			_, err := gcomp.Open(m, gcomp.SessionOptions{Device: "sim", Pool: 1e6, InitWeights: true})
			return err
		}, "gcomp: Open: a pool of 1000000 runs in flight, more than MaxPool (1024)", nil},
	} {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			err = tc.call()
		}()
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if got := gcomp.FromHost(nil).String(); got != "nil" {
		t.Errorf("FromHost(nil).String() = %q", got)
	}
}

// A pool of simulated devices, each a copy of the weights, arena and buffers in host memory,
// that would not fit half the memory the process may use is refused before any is made.
func TestSimPoolTooLarge(t *testing.T) {
	n := memlimit.Default()/gcomp.MaxPool/4 + 1 // f32 weights per device that overflow the pool
	if n > 1<<28 {
		t.Skip("a machine this large needs a model too large for a unit test")
	}
	side := int(math.Ceil(math.Sqrt(float64(n))))
	m, err := gcomp.Compile("wide", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 1, side)
		b.Output("y", nn.NewLinear(b, "fc", side, side).Forward(x))
	}, gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gcomp.Open(m, gcomp.SessionOptions{Device: "sim", Pool: gcomp.MaxPool, InitWeights: true})
	want := fmt.Sprintf("gcomp: Open: a pool of %d simulated devices of ", gcomp.MaxPool)
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, gcomp.ErrOutOfMemory) {
		t.Fatalf("err = %v, want %q (ErrOutOfMemory)", err, want)
	}
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: "sim", Pool: 2, InitWeights: true})
	if err != nil {
		t.Fatalf("a pool of 2: %v", err)
	}
	s.Close()
}

// On ref, weights past the interpreter's budget are refused by Open, before they are converted.
func TestOpenRefBudget(t *testing.T) {
	m := compileMLP(t) // 64·32 + 32 + 32·10 + 10 parameters and 16·64 inputs: 27,632 bytes as float64
	defer ref.SetMemoryBudget(0)
	ref.SetMemoryBudget(20_000)
	if _, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", InitWeights: true}); !errors.Is(err, gcomp.ErrOutOfMemory) ||
		!strings.Contains(err.Error(), "in inputs and parameters, more than its memory budget of 20000 bytes") {
		t.Errorf("err = %v, want ErrOutOfMemory", err)
	}
	ref.SetMemoryBudget(1 << 20)
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", InitWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
