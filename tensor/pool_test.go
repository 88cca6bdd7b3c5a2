package tensor

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// A recycled buffer comes back from New zeroed and from Empty as it was; Recycle empties the
// tensor it takes; buffers below minPooled and beyond poolLimit are not kept.
func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dtype ir.DType
		n     int
		zero  bool
		reuse bool
	}{
		{"f32 New", ir.F32, 4096, true, true},
		{"f32 Empty", ir.F32, 4096, false, true},
		{"i64 New", ir.I64, 2048, true, true},
		{"i32 Empty", ir.I32, 2048, false, true},
		{"too small", ir.F32, minPooled - 1, true, false},
		{"too large", ir.F64, poolLimit/8 + 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := ir.Type{DType: tc.dtype, Shape: ir.Shape{tc.n}}
			x := New(typ)
			first := elem0(x)
			if x.F != nil {
				x.F[0] = 7
			} else {
				x.I[0] = 7
			}
			Recycle(x)
			if x.F != nil || x.I != nil {
				t.Fatal("Recycle left the tensor its buffer")
			}
			var y *Tensor
			if tc.zero {
				y = New(typ)
			} else {
				y = Empty(typ)
			}
			defer Recycle(y)
			if got := elem0(y) == first; got != tc.reuse {
				t.Fatalf("buffer reused: %v, want %v", got, tc.reuse)
			}
			want := 7.0
			if tc.zero || !tc.reuse {
				want = 0
			}
			if y.At(0) != want || y.Len() != tc.n {
				t.Fatalf("element 0 = %v of %d, want %v of %d", y.At(0), y.Len(), want, tc.n)
			}
		})
	}
}

func elem0(x *Tensor) any {
	if x.F != nil {
		return &x.F[0]
	}
	return &x.I[0]
}
