package ptx

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// quantMMA is x[M,K]·wᵀ with w[N,K] = dequantize(q, scale[, zero]) {axis=1} of dt's scales,
// or, with cast, an f32 dequantize (f32 scales) cast to dt: the forms codegen/qmma takes.
func quantMMA(dt, qd string, cast bool, m, n, k, bits, group int, zero bool) string {
	sdt := dt
	if cast {
		sdt = "f32"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "graph g {\n  input %%x : %s[%d,%d]\n  param %%q : %s[%d,%d]\n  param %%s : %s[%d,%d]\n", dt, m, k, qd, n, k*bits/8, sdt, n, k/group)
	args := "%q, %s"
	if zero {
		fmt.Fprintf(&b, "  param %%z : %s[%d,%d]\n", qd, n, k/group)
		args += ", %z"
	}
	fmt.Fprintf(&b, "  %%w = dequantize(%s) {axis=1, bits=%d, group=%d} : %s[%d,%d]\n", args, bits, group, sdt, n, k)
	w := "%w"
	if cast {
		fmt.Fprintf(&b, "  %%wc = cast(%%w) {to=%s} : %s[%d,%d]\n", dt, dt, n, k)
		w = "%wc"
	}
	fmt.Fprintf(&b, "  %%0 = dot_general(%%x, %s) {lhs_contract=[1], rhs_contract=[1]} : %s[%d,%d]\n  output y = %%0\n}", w, dt, m, n)
	return b.String()
}

// quantInputs is inputsFor(g) with a quantized weight's operands drawn as a checkpoint's: every
// integer of q's dtype, zero points in [0, 2^bits) (i8: shifted by −128), and scales of a real
// checkpoint's size (1/8 of a step per 2^bits), which keep the sums near 1, in the scales' dtype.
func quantInputs(g *ir.Graph, seed uint64, bits int, r *rand.Rand) map[string]*tensor.Tensor {
	in := inputsFor(g, seed, 1)
	for i := range in["q"].I {
		if in["q"].Type.DType == ir.U8 {
			in["q"].I[i] = int64(r.IntN(256))
		} else {
			in["q"].I[i] = int64(r.IntN(256) - 128)
		}
	}
	if z := in["z"]; z != nil {
		for i := range z.I {
			z.I[i] = int64(r.IntN(1 << bits))
			if z.Type.DType == ir.I8 {
				z.I[i] -= 128
			}
		}
	}
	for i := range in["s"].F {
		in["s"].F[i] = tensor.RoundFloat(in["s"].Type.DType, in["s"].F[i]/float64(int(1)<<bits)/8)
	}
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
	cases := []struct {
		bits, group int // group 0: one per row
		zero, cast  bool
		qd, dt      string
		m, n, k     int
		chunk       int // bytes per copy of q
	}{
		{4, 32, true, false, "u8", "f16", 128, 128, 256, 16},
		{4, 128, true, false, "u8", "bf16", 33, 72, 512, 16},
		{4, 64, false, false, "u8", "f16", 130, 40, 192, 16},
		{4, 0, false, true, "u8", "bf16", 17, 100, 96, 16},
		{4, 16, true, true, "u8", "f16", 20, 64, 48, 8},
		{8, 32, false, false, "i8", "f16", 64, 136, 128, 16},
		{8, 128, true, true, "u8", "bf16", 9, 50, 256, 16},
		{8, 0, false, false, "i8", "bf16", 40, 24, 100, 4},
		{8, 48, true, false, "u8", "f16", 12, 31, 144, 16},
		{8, 0, true, false, "u8", "f16", 25, 16, 99, 1},
		{8, 64, false, true, "i8", "f16", 16, 200, 320, 16},
		{8, 64, true, false, "u8", "f16", 40, 72, 128, 16},
	}
	for _, c := range cases {
		group := c.group
		if group == 0 {
			group = c.k
		}
		name := fmt.Sprintf("int%d_%s_g%d_zero%v_cast%v_%s_%dx%dx%d", c.bits, c.qd, group, c.zero, c.cast, c.dt, c.m, c.n, c.k)
		t.Run(name, func(t *testing.T) {
			g := parse(t, quantMMA(c.dt, c.qd, c.cast, c.m, c.n, c.k, c.bits, group, c.zero))
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
			if halves := c.dt == "f16" && !c.cast && c.k%32 == 0; strings.Contains(text, "mul.rn.f16x2") != halves {
				t.Errorf("f16x2 dequantization: %v, want %v", !halves, halves)
			}
			copyIns := map[int]string{16: "cp.async.cg.shared.global", 8: "cp.async.cg.shared.global", 4: "cp.async.ca.shared.global", 1: "ld.global.u8"}
			if !strings.Contains(text, copyIns[c.chunk]) {
				t.Errorf("q not copied by %s", copyIns[c.chunk])
			}
			in := quantInputs(g, uint64(c.m*c.n+c.k), c.bits, rand.New(rand.NewPCG(uint64(c.bits*group+c.m), 3)))
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
