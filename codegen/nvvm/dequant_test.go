package nvvm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// NVVM's dequantize equals the reference and codegen/ptx's: int4 with zero points as a loop
// kernel (the dequantize of a prefill product), i8 per-channel and bf16 scales, and a decode
// product over an int4 weight, which NVVM computes with the direct template.
func TestDequantize(t *testing.T) {
	p := requireProducer(t)
	var kernels []plan.Kernel
	for _, c := range []struct{ name, src string }{
		{"int4_zero_f16", `graph g {
  param %q : u8[6,32]
  param %s : f16[6,2]
  param %z : u8[6,2]
  %0 = dequantize(%q, %s, %z) {axis=1, bits=4, group=32} : f16[6,64]
  output w = %0
}`},
		{"int8_axis0_bf16", `graph g {
  param %q : i8[64,5]
  param %s : bf16[1,5]
  %0 = dequantize(%q, %s) {axis=0, bits=8, group=64} : bf16[64,5]
  output w = %0
}`},
		{"int4_gemv_f32", `graph g {
  input %x : f32[2,128]
  param %q : u8[40,64]
  param %s : f32[40,4]
  %w = dequantize(%q, %s) {axis=1, bits=4, group=32} : f32[40,128]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,40]
  output y = %0
}`},
	} {
		g, err := ir.Parse(c.name+".gir", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, plan.Kernel{Name: "k_" + c.name, Graph: g})
	}
	checkModule(t, p, kernels, 5)
}
