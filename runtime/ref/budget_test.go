package ref

import (
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// The memory budget counts the values held at once (8 bytes an element): the input, then each
// intermediate until its last reader. A chain x → neg → abs → exp of f32[100] holds at most
// three values of 800 bytes (x, the value read and the value made).
func TestMemoryBudget(t *testing.T) {
	g, err := ir.Parse("chain.gir", []byte(`graph chain {
  input %x : f32[100]
  %0 = neg(%x) : f32[100]
  %1 = abs(%0) : f32[100]
  %2 = exp(%1) : f32[100]
  output y = %2
}
`))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 100))}
	defer SetMemoryBudget(0)
	for _, tc := range []struct {
		budget int64
		want   string
	}{
		{0, ""},
		{2400, ""},
		{2399, "chain.gir:4: %1 = abs(%0) : f32[100]: the reference interpreter would hold 2400 bytes, more than its memory budget of 2399 bytes"},
		{1000, "chain.gir:3: %0 = neg(%x) : f32[100]: the reference interpreter would hold 1600 bytes"},
	} {
		SetMemoryBudget(tc.budget)
		_, err := Run(g, in, nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("budget %d: err = %v, want %q", tc.budget, err, tc.want)
		}
	}
}

// Inputs and parameters count against the budget before anything runs (CheckBound, which
// commands call before they convert the parameters): a parameter of 1000 f32 holds 8000 bytes.
func TestMemoryBudgetParams(t *testing.T) {
	g, err := ir.Parse("params.gir", []byte(`graph params {
  input %x : f32[10]
  param %w : f32[1000]
  %0 = reduce_sum(%w) {axes=[0]} : f32[]
  %1 = neg(%x) : f32[10]
  output s = %0
  output y = %1
}
`))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 10))}
	params := map[string]*tensor.Tensor{"w": tensor.New(ir.T(ir.F32, 1000))}
	defer SetMemoryBudget(0)
	for _, tc := range []struct {
		budget int64
		want   string
	}{
		{0, ""},
		{8080 + 8 + 80, ""},
		{8079, "params.gir:3: param %w : f32[1000]: the reference interpreter would hold 8080 bytes in inputs and parameters, more than its memory budget of 8079 bytes"},
	} {
		SetMemoryBudget(tc.budget)
		bound := CheckBound(g)
		_, err := Run(g, in, params)
		for _, e := range []error{bound, err} {
			if tc.want == "" && e != nil || tc.want != "" && (e == nil || !strings.Contains(e.Error(), tc.want) || !errors.Is(e, ErrMemoryBudget)) {
				t.Errorf("budget %d: err = %v, want %q", tc.budget, e, tc.want)
			}
		}
	}
}
