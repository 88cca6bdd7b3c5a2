package ops

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// update_slice's contract (docs/ops.md): the update's rows land at clamp(start[b], 0, S−T) of
// each batch row, everything else is the operand's.
func TestUpdateSliceEval(t *testing.T) {
	const F = ir.F32
	ax := func(a int) ir.Attrs { return ir.Attrs{"axis": a} }
	for _, c := range []struct {
		name                   string
		a                      ir.Attrs
		operand, update, start *tensor.Tensor
		want                   *tensor.Tensor
	}{
		{"at 0", ax(1), tt(F, []int{1, 4, 1}, 0, 1, 2, 3), tt(F, []int{1, 1, 1}, 9), vec(ir.I64, 0), tt(F, []int{1, 4, 1}, 9, 1, 2, 3)},
		{"at the end", ax(1), tt(F, []int{1, 4, 1}, 0, 1, 2, 3), tt(F, []int{1, 1, 1}, 9), vec(ir.I64, 3), tt(F, []int{1, 4, 1}, 0, 1, 2, 9)},
		{"past the end clamps", ax(1), tt(F, []int{1, 4, 1}, 0, 1, 2, 3), tt(F, []int{1, 1, 1}, 9), vec(ir.I64, 7), tt(F, []int{1, 4, 1}, 0, 1, 2, 9)},
		{"negative clamps to 0", ax(1), tt(F, []int{1, 4, 1}, 0, 1, 2, 3), tt(F, []int{1, 1, 1}, 9), vec(ir.I64, -5), tt(F, []int{1, 4, 1}, 9, 1, 2, 3)},
		{"batch rows at their own positions", ax(1), tt(F, []int{2, 3, 2}, 0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15),
			tt(F, []int{2, 1, 2}, -1, -2, -3, -4), vec(ir.I32, 2, 0), tt(F, []int{2, 3, 2}, 0, 1, 2, 3, -1, -2, -3, -4, 12, 13, 14, 15)},
		{"several rows over heads (prefill)", ax(2), tt(F, []int{1, 2, 4, 1}, 0, 1, 2, 3, 4, 5, 6, 7),
			tt(F, []int{1, 2, 2, 1}, 20, 21, 30, 31), vec(ir.I64, 1), tt(F, []int{1, 2, 4, 1}, 0, 20, 21, 3, 4, 30, 31, 7)},
		{"several rows clamped to fit", ax(2), tt(F, []int{1, 2, 4, 1}, 0, 1, 2, 3, 4, 5, 6, 7),
			tt(F, []int{1, 2, 2, 1}, 20, 21, 30, 31), vec(ir.I64, 3), tt(F, []int{1, 2, 4, 1}, 0, 1, 20, 21, 4, 5, 30, 31)},
		{"the whole axis", ax(1), tt(F, []int{1, 2}, 1, 2), tt(F, []int{1, 2}, 5, 6), vec(ir.I64, 1), tt(F, []int{1, 2}, 5, 6)},
		{"no rows", ax(1), tt(F, []int{1, 3, 1}, 1, 2, 3), tt(F, []int{1, 0, 1}), vec(ir.I64, 1), tt(F, []int{1, 3, 1}, 1, 2, 3)},
		{"no batch", ax(1), tt(F, []int{0, 3}), tt(F, []int{0, 1}), tt(ir.I64, []int{0}), tt(F, []int{0, 3})},
		{"i32", ax(1), tt(ir.I32, []int{1, 3}, 1, 2, 3), tt(ir.I32, []int{1, 1}, -7), vec(ir.U8, 1), tt(ir.I32, []int{1, 3}, 1, -7, 3)},
		{"bool", ax(1), tt(ir.Bool, []int{1, 3}, 0, 0, 0), tt(ir.Bool, []int{1, 2}, 1, 1), vec(ir.I8, 1), tt(ir.Bool, []int{1, 3}, 0, 1, 1)},
		{"bf16 keeps NaN and -0", ax(1), tt(ir.BF16, []int{1, 3}, nan, 1, 2), tt(ir.BF16, []int{1, 1}, nz), vec(ir.I64, 2), tt(ir.BF16, []int{1, 3}, nan, 1, nz)},
	} {
		got, err := apply(UpdateSliceOp, c.a, c.operand, c.update, c.start)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !got.Type.Equal(c.want.Type) || !sameBits(got, c.want) {
			t.Errorf("%s: got %s %v%v, want %s %v%v", c.name, got.Type, got.F, got.I, c.want.Type, c.want.F, c.want.I)
		}
	}
}

// sameBits compares element by element, NaN equal to NaN and -0 unequal to +0.
func sameBits(a, b *tensor.Tensor) bool {
	if len(a.F) != len(b.F) || len(a.I) != len(b.I) {
		return false
	}
	for i := range a.F {
		x, y := a.F[i], b.F[i]
		if x != x && y != y {
			continue
		}
		if x != y || (x == 0 && 1/x != 1/y) {
			return false
		}
	}
	for i := range a.I {
		if a.I[i] != b.I[i] {
			return false
		}
	}
	return true
}

func TestUpdateSliceInferErrors(t *testing.T) {
	f32 := func(s ...int) ir.Type { return ir.T(ir.F32, s...) }
	for _, c := range []struct {
		args []ir.Type
		axis int
		want string
	}{
		{[]ir.Type{f32(2, 4), f32(2, 1), ir.T(ir.I64, 2)}, 0, "axis 0"},
		{[]ir.Type{f32(2, 4), f32(2, 1), ir.T(ir.I64, 2)}, 2, "axis 2"},
		{[]ir.Type{f32(4), f32(1), ir.T(ir.I64, 4)}, 1, "axis 1"},
		{[]ir.Type{f32(2, 4), f32(2, 5), ir.T(ir.I64, 2)}, 1, "does not fit"},
		{[]ir.Type{f32(2, 4, 3), f32(2, 1, 2), ir.T(ir.I64, 2)}, 1, "does not fit"},
		{[]ir.Type{f32(2, 4), ir.T(ir.F16, 2, 1), ir.T(ir.I64, 2)}, 1, "differ in dtype"},
		{[]ir.Type{f32(2, 4), f32(2, 1, 1), ir.T(ir.I64, 2)}, 1, "differ in dtype or rank"},
		{[]ir.Type{f32(2, 4), f32(2, 1), f32(2)}, 1, "start must be integers [2]"},
		{[]ir.Type{f32(2, 4), f32(2, 1), ir.T(ir.I64, 3)}, 1, "start must be integers [2]"},
		{[]ir.Type{f32(2, 4), f32(2, 1), ir.T(ir.I64)}, 1, "start must be integers [2]"},
	} {
		_, err := Infer(UpdateSliceOp, c.args, ir.Attrs{"axis": c.axis})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v axis %d: got %v, want an error with %q", c.args, c.axis, err, c.want)
		}
	}
}
