package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// TestModuleFallback: a module with a tensor-core GEMM over a quantized weight, a template with
// no NVVM counterpart, compiles with codegen/ptx's entry for it beside libNVVM's for the others,
// in the kernels' order; the launch says whose entry it runs, and the entry computes what
// codegen/ptx's own module does, bit for bit.
func TestModuleFallback(t *testing.T) {
	p := requireProducer(t)
	g := quantizedGEMM(t)
	loop := ir.NewGraph("neg")
	x := loop.Input("x", ir.T(ir.F32, 16), nil)
	loop.SetOutput("y", loop.Add("neg", x.Type, nil, x))
	kernels := []ptx.Kernel{{Name: "k0_neg", Graph: loop}, {Name: "k1_dequantize_matmul", Graph: g}, {Name: "k2_neg", Graph: loop}}
	tg := ptx.Target{SM: 80}
	if !borrowed(kernels[1], tg) || borrowed(kernels[0], tg) {
		t.Fatalf("borrowed: quantized GEMM %v, loop %v; want only the GEMM", borrowed(kernels[1], tg), borrowed(kernels[0], tg))
	}
	text, launches, err := p.Module(kernels, tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(launches) != 3 || launches[1].Producer != "ptx" || launches[0].Producer == "ptx" || launches[2].Entry != "k0_neg" {
		t.Fatalf("launches %+v", launches)
	}
	if !strings.Contains(strings.Join(launches[1].Notes, "\n"), "codegen/ptx's") {
		t.Errorf("the GEMM's launch does not say whose entry it runs: %q", launches[1].Notes)
	}
	for _, e := range []string{".entry k0_neg(", ".entry k1_dequantize_matmul("} {
		if strings.Count(text, e) != 1 {
			t.Errorf("the module has %d %s entries, want 1", strings.Count(text, e), e)
		}
	}
	assemble(t, text, kernels[:2])
	in := quantizedInputs(g)
	got, _ := run(t, text, kernels[1], launches[1], in)
	ptxText, ptxLaunches, err := ptx.Module(kernels[1:2], tg)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := run(t, ptxText, kernels[1], ptxLaunches[0], in)
	if string(got["y"].Bytes()) != string(want["y"].Bytes()) {
		t.Error("the borrowed entry's output differs from codegen/ptx's module's")
	}
}
