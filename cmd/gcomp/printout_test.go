package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestFormatTensor checks the printed form of `gcomp run` without --output-dir against what
// NumPy's str(array) prints with its default options (threshold 1000, edgeitems 3, precision 8).
func TestFormatTensor(t *testing.T) {
	floats := func(d ir.DType, shape []int, v ...float64) *tensor.Tensor {
		x := tensor.New(ir.T(d, shape...))
		for i := range v {
			x.F[i] = tensor.RoundFloat(d, v[i])
		}
		return x
	}
	ints := func(d ir.DType, shape []int, v ...int64) *tensor.Tensor {
		x := tensor.New(ir.T(d, shape...))
		copy(x.I, v)
		return x
	}
	iota := func(d ir.DType, shape ...int) *tensor.Tensor {
		x := tensor.New(ir.T(d, shape...))
		for i := range x.I {
			x.I[i] = int64(i)
		}
		return x
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		t    *tensor.Tensor
		want string
	}{
		{"f32 scalar", floats(ir.F32, nil, 1.5), "1.5"},
		{"f32 integral scalar", floats(ir.F32, nil, 2), "2."},
		{"i64 scalar", ints(ir.I64, nil, -7), "-7"},
		{"bool scalar", ints(ir.Bool, nil, 1), "True"},
		{"zero-size", floats(ir.F32, []int{0}), "[]"},
		{"zero-size inner dim", floats(ir.F16, []int{2, 0}), "[]"},
		{"zero-size outer dim", ints(ir.I32, []int{0, 3}), "[]"},
		{"aligned on the point", floats(ir.F32, []int{3}, 0.5, 0.25, -1), "[ 0.5   0.25 -1.  ]"},
		{"integral floats", floats(ir.F32, []int{2}, 1, 2), "[1. 2.]"},
		{"zeros", floats(ir.F64, []int{2}, 0, 0), "[0. 0.]"},
		{"f32 digits", floats(ir.F32, []int{2}, 0.1, 1.0/3), "[0.1        0.33333334]"},
		{"f64 at most 8 digits", floats(ir.F64, []int{1}, 1.0/3), "[0.33333333]"},
		{"f16 shortest for its dtype", floats(ir.F16, []int{2}, 0.1, 1.0/3), "[0.1    0.3333]"},
		{"bf16 shortest for its dtype", floats(ir.BF16, []int{2}, 0.1, 1.0/3), "[0.1   0.334]"},
		{"scientific: tiny", floats(ir.F64, []int{2}, 1e-5, 1e10), "[1.e-05 1.e+10]"},
		{"scientific: mantissas padded with zeros", floats(ir.F64, []int{2}, 1.5e-5, 1e10), "[1.5e-05 1.0e+10]"},
		{"scientific: far apart", floats(ir.F32, []int{2}, 100000, 1), "[1.e+05 1.e+00]"},
		{"scientific: three-digit exponent", floats(ir.F64, []int{2}, 1e-300, 1), "[1.e-300 1.e+000]"},
		{"f8e4m3 shortest for its dtype", floats(ir.F8E4M3, []int{2}, 0.1, 448), "[1.0e-01 4.5e+02]"},
		{"nan and inf", floats(ir.F32, []int{3}, 1.5, nan, -inf), "[ 1.5  nan -inf]"},
		{"only nan", floats(ir.F32, []int{2}, nan, inf), "[nan inf]"},
		{"bool", ints(ir.Bool, []int{2}, 1, 0), "[ True False]"},
		{"i8 aligned right", ints(ir.I8, []int{3}, -128, 5, 127), "[-128    5  127]"},
		{"u8 matrix", ints(ir.U8, []int{2, 2}, 1, 2, 3, 255), "[[  1   2]\n [  3 255]]"},
		{"rank 3", iota(ir.I32, 2, 2, 2), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"},
		{"1000 elements are not summarized", iota(ir.I64, 1000), "[" + iotaRow(1000) + "]"},
		{"1001 elements are", iota(ir.I64, 1001), "[   0    1    2 ...  998  999 1000]"},
		{"summarized rows", iota(ir.I32, 2, 1000), "[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]"},
		{"summarized rank 3", iota(ir.I32, 8, 2, 70),
			"[[[   0    1    2 ...   67   68   69]\n  [  70   71   72 ...  137  138  139]]\n\n" +
				" [[ 140  141  142 ...  207  208  209]\n  [ 210  211  212 ...  277  278  279]]\n\n" +
				" [[ 280  281  282 ...  347  348  349]\n  [ 350  351  352 ...  417  418  419]]\n\n" +
				" ...\n\n" +
				" [[ 700  701  702 ...  767  768  769]\n  [ 770  771  772 ...  837  838  839]]\n\n" +
				" [[ 840  841  842 ...  907  908  909]\n  [ 910  911  912 ...  977  978  979]]\n\n" +
				" [[ 980  981  982 ... 1047 1048 1049]\n  [1050 1051 1052 ... 1117 1118 1119]]]"},
		{"summarized floats: the format is chosen over the shown elements", func() *tensor.Tensor {
			x := floats(ir.F32, []int{1001})
			x.F[500] = 1e9 // hidden: fixed notation stays
			x.F[1] = 0.5
			return x
		}(), "[0.  0.5 0.  ... 0.  0.  0. ]"},
	} {
		if got := formatTensor(tc.t); got != tc.want {
			t.Errorf("%s: %s printed\n%s\nwant\n%s", tc.name, tc.t.Type, got, tc.want)
		}
	}
}

// iotaRow is 0 ... n-1 right-aligned to the widest, as NumPy prints them.
func iotaRow(n int) string {
	w := len(fmt.Sprint(n - 1))
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%*d", w, i)
	}
	return strings.Join(parts, " ")
}
