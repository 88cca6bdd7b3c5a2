package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// TestFallbackOrder: a module with a kernel whose template has no NVVM counterpart (a GEMV with
// a norm prologue) between two of its own compiles with codegen/ptx's entry for it beside
// libNVVM's for the others, in the kernels' order, and the launch says whose entry it runs.
func TestFallbackOrder(t *testing.T) {
	p := requireProducer(t)
	g := normGEMVGraph(t)
	loop := ir.NewGraph("neg")
	x := loop.Input("x", ir.T(ir.F32, 16), nil)
	loop.SetOutput("y", loop.Add("neg", x.Type, nil, x))
	kernels := []ptx.Kernel{{Name: "k0_neg", Graph: loop}, {Name: "k1_layernorm_matmul", Graph: g}, {Name: "k2_neg", Graph: loop}}
	if !borrowed(kernels[1]) || borrowed(kernels[0]) {
		t.Fatal("want the norm GEMV borrowed and the loop kernel not")
	}
	if _, _, err := IR(kernels[1:2], ptx.Target{SM: 80}); !Refused(err) {
		t.Fatalf("IR of a norm GEMV kernel: %v, want a refusal", err)
	}
	text, launches, err := p.Module(kernels, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if len(launches) != 3 || launches[1].Producer != "ptx" || launches[0].Producer == "ptx" || launches[2].Entry != "k0_neg" {
		t.Fatalf("launches %+v", launches)
	}
	if !strings.Contains(strings.Join(launches[1].Notes, "\n"), "codegen/ptx's") {
		t.Errorf("the norm GEMV's launch does not say whose entry it runs: %q", launches[1].Notes)
	}
	for _, e := range []string{".entry k0_neg(", ".entry k1_layernorm_matmul("} {
		if strings.Count(text, e) != 1 {
			t.Errorf("the module has %d %s entries, want 1", strings.Count(text, e), e)
		}
	}
	assemble(t, text, kernels[:2])
	checkNormGEMV(t, g, text, kernels[1], launches[1])
}
