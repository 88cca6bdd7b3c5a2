package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestCastFP8 is the cast row's fp8 contract: one rounding to nearest even from the exact value,
// saturating (satfinite) beyond the largest finite and at ±inf, NaN kept, exact widening.
func TestCastFP8(t *testing.T) {
	E4, E5 := ir.F8E4M3, ir.F8E5M2
	cast := func(x *tensor.Tensor, to ir.DType, want ...float64) evalCase {
		return evalCase{"cast", ir.Attrs{"to": to}, []*tensor.Tensor{x}, vec(to, want...)}
	}
	e5inf, err := tensor.FromBytes(ir.T(E5, 3), []byte{0x7B, 0xFC, 0x7F})
	if err != nil {
		t.Fatal(err)
	}
	if got := e5inf.Bytes(); string(got) != "\x7b\xfc\x7f" {
		t.Errorf("f8e5m2 bytes %x do not round-trip", got)
	}
	runEvalCases(t, []evalCase{
		cast(vec(ir.F32, 1, 449, 464, 1e30, inf, -inf, nan, nz, 0x1p-10, 0x1.8p-9), E4, 1, 448, 448, 448, 448, -448, nan, nz, 0, 0x1p-8),
		cast(vec(ir.F32, 1.0625, 1.1875, 61440, -1e9, inf, 0x1p-17), E5, 1, 1.25, 57344, -57344, 57344, 0),
		// Above a tie of E4M3 (1 + 2^-4) by less than f32's ulp: one rounding from the exact f64
		// value rounds up where rounding through f32 first would land on the tie and go to even.
		cast(vec(ir.F64, 1+0x1p-4+0x1p-40), E4, 1.125),
		cast(vec(ir.F16, 65504, -0x1p-10), E4, 448, nz), // half E4M3's smallest subnormal: a tie, to even (-0)
		cast(vec(ir.I64, 1<<62, -3, 17), E4, 448, -3, 16),
		cast(vec(ir.I32, 1000000, 7, -9), E5, 57344, 7, -8),
		cast(vec(E4, 448, -0x1p-9, nan), ir.F32, 448, -0x1p-9, nan),
		// An E5M2 tensor holds ±inf only from bytes (0xFC): rounding to fp8 saturates.
		cast(e5inf, ir.F64, 57344, -inf, nan),
		cast(e5inf, ir.F16, 57344, -inf, nan),
		cast(vec(E4, 448, 0.875), ir.BF16, 448, 0.875),
		cast(vec(E4, 448, -2.5, nan), ir.I32, 448, -2, 0),
		cast(vec(E4, 0, nz, 0.5), ir.Bool, 0, 0, 1),
		cast(vec(E4, 448, -0x1p-9, 3), E5, 448, -0x1p-9, 3),
		cast(vec(E5, 57344, 0x1p-16, -inf), E4, 448, 0, -448),
	})
}

// TestFP8IsStorage: fp8 tensors are cast and moved, never computed on.
func TestFP8IsStorage(t *testing.T) {
	x := ir.T(ir.F8E4M3, 2, 3)
	for _, c := range []struct {
		op   string
		args []ir.Type
		a    ir.Attrs
		want string // "" when the op accepts fp8
	}{
		{"add", []ir.Type{x, x}, nil, "wants a float or integer type, have f8e4m3[2,3]"},
		{"exp", []ir.Type{x}, nil, "wants a float type, have f8e4m3[2,3]"},
		{"reduce_sum", []ir.Type{x}, ir.Attrs{"axes": []int{0}}, "wants a float or integer type"},
		{"transpose", []ir.Type{x}, ir.Attrs{"perm": []int{1, 0}}, ""},
		{"reshape", []ir.Type{x}, ir.Attrs{"shape": []int{6}}, ""},
		{"cast", []ir.Type{x}, ir.Attrs{"to": ir.F8E5M2}, ""},
		{"dot_general", []ir.Type{x, ir.T(ir.F8E5M2, 3, 4)}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}, "operand dtypes differ"},
		{"conv2d", []ir.Type{ir.T(ir.F8E4M3, 1, 1, 3, 3), ir.T(ir.F8E4M3, 1, 1, 1, 1)}, nil, "f8e4m3"},
	} {
		_, err := Infer(c.op, c.args, c.a)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s(%v): %v, want %q", c.op, c.args, err, c.want)
		}
	}
	// dot_general over fp8 gives f16: the sum of exact products rounded once (448² − 448² + 2⁻¹⁸).
	a := tensor.FromFloats(ir.T(ir.F8E4M3, 1, 3), []float64{448, 448, 0x1p-9})
	b := tensor.FromFloats(ir.T(ir.F8E4M3, 3, 1), []float64{448, -448, 0x1p-9})
	got, err := apply("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}, a, b)
	if err != nil || got.Type.String() != "f16[1,1]" || got.F[0] != 0x1p-18 {
		t.Errorf("dot_general over f8e4m3: %v %v", got, err)
	}
	if !math.IsNaN(tensor.RoundFloat(ir.F8E4M3, math.NaN())) {
		t.Error("NaN does not survive rounding to f8e4m3")
	}
}
