package ptx

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/qmmatest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// quantMMA is qmmatest's case.
func quantMMA(dt, qd string, cast bool, m, n, k, bits, group int, zero bool) string {
	return qmmatest.Source(qmmatest.Case{Bits: bits, Group: group, Zero: zero, Cast: cast, QD: qd, DT: dt, M: m, N: n, K: k})
}

// quantInputs is inputsFor(g) with a quantized weight's operands drawn as a checkpoint's
// (qmmatest.Quantize).
func quantInputs(g *ir.Graph, seed uint64, bits int, r *rand.Rand) map[string]*tensor.Tensor {
	in := inputsFor(g, seed, 1)
	qmmatest.Quantize(in, bits, r)
	return in
}

// TestQuantizedMMA: the tensor-core GEMM over a dequantized weight equals the reference's
// dequantize-then-matmul (float64, rounded once) within the harness's tolerance for the
// 16-bit operands, for int8 (signed and unsigned) and int4, groups of 32/64/128, 16 and 48
// (scales per k16 slab) and one per row, with and without zero points, f16 and bf16 (dequantize
// of 16-bit scales, or an f32 one cast), ragged M, N and K, q's rows copied by 16-byte, 4-byte
// and byte copies, fragments formed in f16x2 registers (f16 scales, K a multiple of 32) or in
// f32; the kernel reads q's bytes (no ldmatrix of B), and checkKernel assembles it
// for sm_80 and sm_90 without spills and runs it under memcheck and racecheck.
func TestQuantizedMMA(t *testing.T) {
	for _, c := range qmmatest.MMA {
		t.Run(c.Name(), func(t *testing.T) {
			g := parse(t, qmmatest.Source(c.Case))
			kern := Kernel{Name: "k_qmma", Graph: g}
			if !QuantizedMMA(kern) {
				t.Fatal("not a quantized tensor-core GEMM")
			}
			var globals []string
			text, _, err := matmulKernel(kern, harnessTarget, &globals)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "mma.sync.aligned.m16n8k16") || strings.Count(text, "ldmatrix") != 8 { // A: 4 row tiles × 2 k16 slabs; B from ld.shared
				t.Fatalf("want mma.sync with ldmatrix for A only:\n%s", text)
			}
			// f16 scales and whole k steps dequantize in f16x2 registers, the rest in f32.
			if halves := c.DT == "f16" && !c.Cast && c.K%32 == 0; strings.Contains(text, "mul.rn.f16x2") != halves {
				t.Errorf("f16x2 dequantization: %v, want %v", !halves, halves)
			}
			copyIns := map[int]string{16: "cp.async.cg.shared.global", 8: "cp.async.cg.shared.global", 4: "cp.async.ca.shared.global", 1: "ld.global.u8"}
			if !strings.Contains(text, copyIns[c.Chunk]) {
				t.Errorf("q not copied by %s", copyIns[c.Chunk])
			}
			in := quantInputs(g, uint64(c.M*c.N+c.K), c.Bits, rand.New(rand.NewPCG(uint64(c.Bits*c.Group+c.M), 3)))
			checkKernel(t, kern, in, false)
		})
	}
}

// TestGEMVQuantizedCast: the GEMV template reads an f32 dequantize cast to bf16 or f16 (autocast's
// weight) as integers too, by 128-bit loads of q where the layout allows and element by element
// where not, and equals the reference's dequantize, cast and matmul.
func TestGEMVQuantizedCast(t *testing.T) {
	for _, c := range []struct {
		bits, group int
		zero        bool
		qd, dt      string
		m, n, k     int
		vector      bool
	}{
		{4, 32, true, "u8", "bf16", 1, 64, 256, true},
		{8, 256, false, "i8", "f16", 3, 48, 256, true},
		{8, 100, true, "u8", "bf16", 2, 88, 100, false},
	} {
		name := fmt.Sprintf("int%d_g%d_%s_%dx%dx%d", c.bits, c.group, c.dt, c.m, c.n, c.k)
		t.Run(name, func(t *testing.T) {
			g := parse(t, quantMMA(c.dt, c.qd, true, c.m, c.n, c.k, c.bits, c.group, c.zero))
			kern := Kernel{Name: "k_qcast", Graph: g}
			cp, err := ContractionPlan(kern, harnessTarget)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Kind != "gemv" {
				t.Fatalf("template %q, want gemv", cp.Kind)
			}
			var globals []string
			text, _, err := matmulKernel(kern, harnessTarget, &globals)
			if err != nil {
				t.Fatal(err)
			}
			if vector := strings.Contains(text, "ld.global.v4.b32") && strings.Contains(text, "bfe."); vector != c.vector {
				t.Errorf("128-bit loads of q: %v, want %v", vector, c.vector)
			}
			// Each weight of a vector is rounded to the 16-bit dtype, as the cast does (a
			// difference the output's tolerance cannot see).
			if n, per := strings.Count(text, "cvt.rn."+c.dt+".f32"), 128/c.bits; c.vector && n < per {
				t.Errorf("%d roundings to %s, want one per weight of a vector (%d)", n, c.dt, per)
			}
			in := quantInputs(g, uint64(c.m*c.n+c.k), c.bits, rand.New(rand.NewPCG(uint64(c.bits*c.group), 5)))
			checkKernel(t, kern, in, false)
		})
	}
}
