package nvvm

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestQuantizedMMAFallback: the tensor-core GEMM over an int4 weight (codegen/ptx's
// mma_dequant.go), which this package has no template for, compiles with codegen/ptx's entry,
// says so in its launch, and equals the reference within f16's rounding of the sums; lowered
// alone to NVVM IR it is refused, not miscompiled.
func TestQuantizedMMAFallback(t *testing.T) {
	p := requireProducer(t)
	g := quantizedGEMM(t)
	k := ptx.Kernel{Name: "k0_dequantize_matmul", Graph: g}
	if !ptx.QuantizedMMA(k) {
		t.Fatal("not a quantized tensor-core GEMM")
	}
	// The IR alone (--emit nvvm, --backend auto's probe) refuses it: auto keeps codegen/ptx's.
	if _, _, err := IR([]ptx.Kernel{k}, ptx.Target{SM: 80}); !Refused(err) {
		t.Fatalf("IR: %v, want a refusal", err)
	}
	text, launches, err := p.Module([]ptx.Kernel{k}, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if len(launches) != 1 || launches[0].Producer != "ptx" || !strings.Contains(strings.Join(launches[0].Notes, "\n"), "quantized tensor-core GEMM") {
		t.Fatalf("launches %+v, want codegen/ptx's entry", launches)
	}
	assemble(t, text, []ptx.Kernel{k})
	in := quantizedInputs(g)
	got, _ := run(t, text, k, launches[0], in)
	want, err := ref.Run(g, map[string]*tensor.Tensor{"x": in["x"]}, map[string]*tensor.Tensor{"q": in["q"], "s": in["s"], "z": in["z"]})
	if err != nil {
		t.Fatal(err)
	}
	var m float64
	for _, w := range want["y"].F {
		m = max(m, math.Abs(w))
	}
	for i, w := range want["y"].F {
		if d := math.Abs(got["y"].F[i] - w); !(d <= 2e-3*m) {
			t.Fatalf("y[%d] = %v, want %v", i, got["y"].F[i], w)
		}
	}
}

// quantizedGEMM is a kernel graph of the tensor-core GEMM over an int4 weight (ptx.QuantizedMMA).
func quantizedGEMM(t *testing.T) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("qmma.gir", []byte(`graph g {
  input %x : f16[24,128]
  param %q : u8[40,64]
  param %s : f16[40,4]
  param %z : u8[40,4]
  %w = dequantize(%q, %s, %z) {axis=1, bits=4, group=32} : f16[40,128]
  %y = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f16[24,40]
  output y = %y
}`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// quantizedInputs are inputs of quantizedGEMM's graph: every code and zero point, scales small
// enough for f16 sums.
func quantizedInputs(g *ir.Graph) map[string]*tensor.Tensor {
	in := inputsFor(g, 1)
	for i := range in["q"].I {
		in["q"].I[i] = int64(i*37) % 256
	}
	for i := range in["z"].I {
		in["z"].I[i] = int64(i) % 16
	}
	for i := range in["s"].F {
		in["s"].F[i] = tensor.RoundFloat(ir.F16, in["s"].F[i]/64)
	}
	return in
}
