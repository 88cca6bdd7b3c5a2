package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// TestQuantizedMMAFallback: the tensor-core GEMM over an int4 weight (codegen/ptx's
// mma_dequant.go), which this package has no template for, is refused, not miscompiled: lowered
// alone to NVVM IR and by Module, and Lacks names it (codegen/backend's nvvm producer takes
// codegen/ptx's entry for it and runs it against the reference: TestFallback).
func TestQuantizedMMAFallback(t *testing.T) {
	p := requireProducer(t)
	g := qmmaGraph(t)
	k := plan.Kernel{Name: "k0_dequantize_matmul", Graph: g}
	if !plan.QuantizedMMA(k) {
		t.Fatal("not a quantized tensor-core GEMM")
	}
	// The IR alone (--emit nvvm, --backend auto's probe) refuses it: auto keeps codegen/ptx's.
	if _, _, err := IR([]plan.Kernel{k}, plan.Target{SM: 80}); !Refused(err) {
		t.Fatalf("IR: %v, want a refusal", err)
	}
	if _, _, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80}); !Refused(err) {
		t.Fatalf("Module: %v, want a refusal", err)
	}
	if note, ok := Lacks(k, plan.Target{SM: 80}); !ok || !strings.Contains(note, "quantized tensor-core GEMM") {
		t.Fatalf("Lacks = %q, %v; want the quantized tensor-core GEMM", note, ok)
	}
}

// qmmaGraph is f16 activations times an int4 weight the tensor-core GEMM dequantizes.
func qmmaGraph(t *testing.T) *ir.Graph {
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
