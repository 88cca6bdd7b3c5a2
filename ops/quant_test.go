package ops

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func dqAttrs(bits, group, axis int) ir.Attrs {
	return ir.Attrs{"bits": bits, "group": group, "axis": axis}
}

func TestDequantizeEval(t *testing.T) {
	cases := []struct {
		name string
		a    ir.Attrs
		args []*tensor.Tensor
		want *tensor.Tensor
	}{
		{"int8 per-channel, no zero", dqAttrs(8, 4, 1),
			[]*tensor.Tensor{tt(ir.I8, []int{2, 4}, -128, -1, 0, 127, 1, 2, 3, 4), tt(ir.F32, []int{2, 1}, 0.5, -2)},
			tt(ir.F32, []int{2, 4}, -64, -0.5, 0, 63.5, -2, -4, -6, -8)},
		{"uint8 groups of 2 with zeros, axis 0", dqAttrs(8, 2, 0),
			[]*tensor.Tensor{tt(ir.U8, []int{4, 1}, 0, 255, 10, 12), tt(ir.F32, []int{2, 1}, 1, 0.25), tt(ir.U8, []int{2, 1}, 128, 12)},
			tt(ir.F32, []int{4, 1}, -128, 127, -0.5, 0)},
		{"int4 symmetric: zero 8, low nibble first", dqAttrs(4, 4, 1),
			[]*tensor.Tensor{tt(ir.U8, []int{1, 2}, 0xf0, 0x18), tt(ir.F32, []int{1, 1}, 2)},
			tt(ir.F32, []int{1, 4}, -16, 14, 0, -14)},
		{"int4 with zeros, groups of 2", dqAttrs(4, 2, 1),
			[]*tensor.Tensor{tt(ir.U8, []int{1, 2}, 0x53, 0xf0), tt(ir.F16, []int{1, 2}, 1, 0.5), tt(ir.U8, []int{1, 2}, 3, 15)},
			tt(ir.F16, []int{1, 4}, 0, 2, -7.5, 0)},
		{"rounded once to f16", dqAttrs(8, 1, 0),
			[]*tensor.Tensor{tt(ir.I8, []int{1}, 3), tt(ir.F16, []int{1}, 0.1)},
			tt(ir.F16, []int{1}, 3*tensor.RoundFloat(ir.F16, 0.1))},
		{"bf16 scale, NaN and inf propagate", dqAttrs(8, 1, 0),
			[]*tensor.Tensor{tt(ir.I8, []int{3}, 0, 1, 2), tt(ir.BF16, []int{3}, inf, nan, -inf)},
			tt(ir.BF16, []int{3}, nan, nan, -inf)},
		{"empty", dqAttrs(4, 2, 1),
			[]*tensor.Tensor{tt(ir.U8, []int{0, 1}), tt(ir.F32, []int{0, 1})}, tt(ir.F32, []int{0, 2})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := apply(DequantizeOp, c.a, c.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !same(got, c.want) {
				t.Errorf("got %v %v, want %v %v", got.Type, got.F, c.want.Type, c.want.F)
			}
		})
	}
}

func TestDequantizeInferErrors(t *testing.T) {
	cases := []struct {
		a    ir.Attrs
		args []ir.Type
		want string
	}{
		{dqAttrs(3, 4, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1)}, "bits is 3"},
		{dqAttrs(4, 4, 1), []ir.Type{ir.T(ir.I8, 2, 2), ir.T(ir.F32, 2, 1)}, "bits 4 wants q of u8"},
		{dqAttrs(8, 4, 1), []ir.Type{ir.T(ir.F32, 2, 4), ir.T(ir.F32, 2, 1)}, "bits 8 wants q of i8 or u8"},
		{dqAttrs(8, 3, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1)}, "group 3 does not divide the 4 elements"},
		{dqAttrs(8, 0, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1)}, "group 0 does not divide"},
		{dqAttrs(8, 4, 2), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1)}, "axis 2 is outside"},
		{dqAttrs(8, 4, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.I32, 2, 1)}, "scale must be f32, f16 or bf16"},
		{dqAttrs(8, 2, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1)}, "scale must be f32[2,2]"},
		{dqAttrs(8, 4, 1), []ir.Type{ir.T(ir.I8, 2, 4), ir.T(ir.F32, 2, 1), ir.T(ir.U8, 2, 1)}, "zero must be i8[2,1]"},
		{dqAttrs(8, 4, 1), []ir.Type{ir.T(ir.I8, 2, 4)}, "takes q, scale and optionally zero"},
	}
	for _, c := range cases {
		_, err := Infer(DequantizeOp, c.args, c.a)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want %q", c.args, c.a, err, c.want)
		}
	}
	got, err := Infer(DequantizeOp, []ir.Type{ir.T(ir.U8, 3, 64), ir.T(ir.BF16, 3, 1), ir.T(ir.U8, 3, 1)}, dqAttrs(4, 128, 1))
	if err != nil || !got.Equal(ir.T(ir.BF16, 3, 128)) {
		t.Errorf("int4 per-channel: %v, %v; want bf16[3 128]", got, err)
	}
}
