package ref

import (
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
