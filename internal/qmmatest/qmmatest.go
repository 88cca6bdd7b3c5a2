package qmmatest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Case is x[M,K]·wᵀ with w[N,K] = dequantize(q, scale[, zero]) {axis=1, bits, group} of
// DT's scales, or, with Cast, an f32 dequantize (f32 scales) cast to DT; q's dtype is QD.
type Case struct {
	Bits, Group int
	Zero, Cast  bool
	QD, DT      string
	M, N, K     int
}

// Name names the case for a subtest.
func (c Case) Name() string {
	return fmt.Sprintf("int%d_%s_g%d_zero%v_cast%v_%s_%dx%dx%d", c.Bits, c.QD, c.Group, c.Zero, c.Cast, c.DT, c.M, c.N, c.K)
}

// Source is the case's graph in IR text: inputs x, params q, s and (with Zero) z, output y.
func Source(c Case) string {
	sdt := c.DT
	if c.Cast {
		sdt = "f32"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "graph g {\n  input %%x : %s[%d,%d]\n  param %%q : %s[%d,%d]\n  param %%s : %s[%d,%d]\n", c.DT, c.M, c.K, c.QD, c.N, c.K*c.Bits/8, sdt, c.N, c.K/c.Group)
	args := "%q, %s"
	if c.Zero {
		fmt.Fprintf(&b, "  param %%z : %s[%d,%d]\n", c.QD, c.N, c.K/c.Group)
		args += ", %z"
	}
	fmt.Fprintf(&b, "  %%w = dequantize(%s) {axis=1, bits=%d, group=%d} : %s[%d,%d]\n", args, c.Bits, c.Group, sdt, c.N, c.K)
	w := "%w"
	if c.Cast {
		fmt.Fprintf(&b, "  %%wc = cast(%%w) {to=%s} : %s[%d,%d]\n", c.DT, c.DT, c.N, c.K)
		w = "%wc"
	}
	fmt.Fprintf(&b, "  %%0 = dot_general(%%x, %s) {lhs_contract=[1], rhs_contract=[1]} : %s[%d,%d]\n  output y = %%0\n}", w, c.DT, c.M, c.N)
	return b.String()
}

// Quantize redraws in's quantized weight as a checkpoint's: every integer of q's dtype, zero
// points in [0, 2^bits) (i8: shifted by −128), and scales of a real checkpoint's size (1/8 of a
// step per 2^bits of the drawn value), which keep the sums near 1, in the scales' dtype.
func Quantize(in map[string]*tensor.Tensor, bits int, r *rand.Rand) {
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
}

// MMA is the layouts the tensor-core GEMM's tests cover, with the copy codegen/ptx's test looks
// for in the kernel (16 and 8: a 16-byte cp.async, 4: a 4-byte one, 1: byte loads): int8 (signed and
// unsigned) and int4, groups of 32/64/128, 16 and 48 (scales per k16 slab) and one per row,
// with and without zero points, f16 and bf16 (a dequantize of 16-bit scales, or an f32 one
// cast), ragged M, N and K, fragments formed in f16x2 registers (f16 scales, K a multiple of
// 32) or in f32.
var MMA = []struct {
	Case
	Chunk int
}{
	{Case{4, 32, true, false, "u8", "f16", 128, 128, 256}, 16},
	{Case{4, 128, true, false, "u8", "bf16", 33, 72, 512}, 16},
	{Case{4, 64, false, false, "u8", "f16", 130, 40, 192}, 16},
	{Case{4, 96, false, true, "u8", "bf16", 17, 100, 96}, 16},
	{Case{4, 16, true, true, "u8", "f16", 20, 64, 48}, 8},
	{Case{8, 32, false, false, "i8", "f16", 64, 136, 128}, 16},
	{Case{8, 128, true, true, "u8", "bf16", 9, 50, 256}, 16},
	{Case{8, 100, false, false, "i8", "bf16", 40, 24, 100}, 4},
	{Case{8, 48, true, false, "u8", "f16", 12, 31, 144}, 16},
	{Case{8, 99, true, false, "u8", "f16", 25, 16, 99}, 1},
	{Case{8, 64, false, true, "i8", "f16", 16, 200, 320}, 16},
	{Case{8, 64, true, false, "u8", "f16", 40, 72, 128}, 16},
}
