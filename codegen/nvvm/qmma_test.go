package nvvm

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/qmmatest"
	"github.com/gcomp/gcomp/ir"
)

// TestQuantizedMMA: the tensor-core GEMM over a quantized weight (qmma.go) is this package's
// own: for the layouts codegen/ptx's TestQuantizedMMA covers (qmmatest.MMA: int8 signed and
// unsigned and int4, f16 and bf16 activations, a dequantize of 16-bit scales or an f32 one
// cast, groups per k16 slab, per k step, of several steps and one per row, with and without
// zero points, ragged M, N and K, q copied by 16-byte, 4-byte and byte copies, fragments in
// f16x2 or f32 registers) Lacks names nothing, Module lowers it with mma.sync and ldmatrix
// for A alone (the same PTX twice), ptxas assembles it for sm_80 and sm_90 without spills,
// and on the memchecked simulator it equals codegen/ptx's entry bit for bit and the reference
// within tolerance.
func TestQuantizedMMA(t *testing.T) {
	p := requireProducer(t)
	target := plan.Target{SM: 80}
	for _, c := range qmmatest.MMA {
		t.Run(c.Name(), func(t *testing.T) {
			g, err := ir.Parse("qmma.gir", []byte(qmmatest.Source(c.Case)))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k0_qmma", Graph: g}
			if !plan.QuantizedMMA(k) {
				t.Fatal("not a quantized tensor-core GEMM")
			}
			if note, ok := Lacks(k, target); ok {
				t.Fatalf("Lacks = %q, want no borrowed template", note)
			}
			text, launches, err := p.Module([]plan.Kernel{k}, target)
			if err != nil {
				t.Fatal(err)
			}
			if again, _, err := p.Module([]plan.Kernel{k}, target); err != nil || again != text {
				t.Fatalf("a second Module differs (%v): the PTX is not deterministic", err)
			}
			if !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Count(text, "ldmatrix") != 8 { // A: 4 row tiles × 2 k16 slabs
				t.Fatalf("want mma.sync with ldmatrix for A only:\n%s", text)
			}
			if halves := c.DT == "f16" && !c.Cast && c.K%32 == 0; strings.Contains(text, "mul.rn.f16x2") != halves {
				t.Errorf("f16x2 dequantization: %v, want %v", !halves, halves)
			}
			regs := assemble(t, text, []plan.Kernel{k})
			in := inputsFor(g, uint64(c.M*c.N+c.K))
			qmmatest.Quantize(in, c.Bits, rand.New(rand.NewPCG(uint64(c.Bits*c.Group+c.M), 3)))
			st, pst := checkKernelIn(t, text, k, launches[0], in, target)
			t.Logf("warp instructions: nvvm %d, codegen/ptx %d; registers sm_80 %d, sm_90 %d", st.WarpInsts, pst.WarpInsts, regs[k.Name]["sm_80"], regs[k.Name]["sm_90"])
		})
	}
}
