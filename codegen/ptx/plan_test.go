package ptx

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// ReducePlan asked about a kernel without a reduction (the NVVM producer's auto rule asks about
// every kernel it takes) is an error, not an index out of range.
func TestReducePlanWithoutReduction(t *testing.T) {
	for _, src := range []string{
		`graph k { input %x : f32[4,8]  %0 = relu(%x) : f32[4,8]  output y = %0 }`,
		`graph k { input %a : f32[4,8]  input %b : f32[8,3]  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f32[4,3]  output y = %0 }`,
	} {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReducePlan(Kernel{Name: "k0", Graph: g}); err == nil || !strings.Contains(err.Error(), "no reduction to plan") {
			t.Errorf("%s: err = %v, want no reduction to plan", src, err)
		}
	}
}
