package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

var (
	nan = math.NaN()
	inf = math.Inf(1)
	nz  = math.Copysign(0, -1)
)

// tt builds a tensor of dtype d and shape s (nil: 1-D) from values, rounded or wrapped to d.
func tt(d ir.DType, s []int, vals ...float64) *tensor.Tensor {
	if s == nil {
		s = []int{len(vals)}
	}
	return tensor.FromFloats(ir.T(d, s...), vals)
}

func vec(d ir.DType, vals ...float64) *tensor.Tensor { return tt(d, nil, vals...) }

// apply infers the result type of op and evaluates it.
func apply(op string, a ir.Attrs, args ...*tensor.Tensor) (*tensor.Tensor, error) {
	types := make([]ir.Type, len(args))
	for i, x := range args {
		types[i] = x.Type
	}
	ty, err := Infer(op, types, a)
	if err != nil {
		return nil, err
	}
	return Eval(&ir.Value{Op: op, Attrs: a, Type: ty}, args)
}

// same compares bits: NaN equals NaN, -0 differs from +0.
func same(x, y *tensor.Tensor) bool {
	if !x.Type.Equal(y.Type) || len(x.F) != len(y.F) || len(x.I) != len(y.I) {
		return false
	}
	for i := range x.F {
		a, b := x.F[i], y.F[i]
		if !(a == b && math.Signbit(a) == math.Signbit(b) || a != a && b != b) {
			return false
		}
	}
	for i := range x.I {
		if x.I[i] != y.I[i] {
			return false
		}
	}
	return true
}

func show(x *tensor.Tensor) string {
	var parts []string
	for i := 0; i < x.Len(); i++ {
		if x.F != nil {
			parts = append(parts, ir.FormatFloat(x.F[i]))
		} else {
			parts = append(parts, fmt.Sprint(x.I[i]))
		}
	}
	return x.Type.String() + "{" + strings.Join(parts, " ") + "}"
}

type evalCase struct {
	op   string
	a    ir.Attrs
	args []*tensor.Tensor
	want *tensor.Tensor
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		got, err := apply(c.op, c.a, c.args...)
		if err != nil {
			t.Errorf("%s%s: %v", c.op, showArgs(c.args), err)
			continue
		}
		if !same(got, c.want) {
			t.Errorf("%s%s:\n got %s\nwant %s", c.op, showArgs(c.args), show(got), show(c.want))
		}
	}
}

func showArgs(args []*tensor.Tensor) string {
	var s []string
	for _, x := range args {
		s = append(s, show(x))
	}
	return "(" + strings.Join(s, ", ") + ")"
}

func TestUnary(t *testing.T) {
	F, I := ir.F32, ir.I32
	runEvalCases(t, []evalCase{
		{"neg", nil, []*tensor.Tensor{vec(F, 0, nz, inf, nan, 1.5)}, vec(F, nz, 0, -inf, nan, -1.5)},
		{"neg", nil, []*tensor.Tensor{vec(I, math.MinInt32, 5)}, vec(I, math.MinInt32, -5)},
		{"neg", nil, []*tensor.Tensor{vec(ir.U8, 1, 0)}, vec(ir.U8, 255, 0)},
		{"abs", nil, []*tensor.Tensor{vec(F, nz, -inf, nan, -2)}, vec(F, 0, inf, nan, 2)},
		{"abs", nil, []*tensor.Tensor{vec(ir.I8, -128, -3)}, vec(ir.I8, -128, 3)},
		{"exp", nil, []*tensor.Tensor{vec(F, -inf, inf, 0, 100, nan)}, vec(F, 0, inf, 1, inf, nan)},
		{"exp", nil, []*tensor.Tensor{vec(ir.F16, 12, 1)}, vec(ir.F16, inf, 2.71875)}, // e rounds to 2.71875 in f16
		{"log", nil, []*tensor.Tensor{vec(F, 0, nz, -1, inf, 1)}, vec(F, -inf, -inf, nan, inf, 0)},
		{"sqrt", nil, []*tensor.Tensor{vec(F, nz, -1, inf, 4, 2)}, vec(F, nz, nan, inf, 2, float64(float32(math.Sqrt2)))},
		{"rsqrt", nil, []*tensor.Tensor{vec(F, 0, nz, -1, inf, 4)}, vec(F, inf, -inf, nan, 0, 0.5)},
		{"tanh", nil, []*tensor.Tensor{vec(F, nz, inf, -inf, nan)}, vec(F, nz, 1, -1, nan)},
		{"sigmoid", nil, []*tensor.Tensor{vec(F, -inf, inf, nan, 0, -800, 800)}, vec(F, 0, 1, nan, 0.5, 0, 1)},
		{"relu", nil, []*tensor.Tensor{vec(F, nan, nz, -1, 2, -inf, inf)}, vec(F, nan, 0, 0, 2, 0, inf)},
		{"erf", nil, []*tensor.Tensor{vec(F, nz, inf, -inf)}, vec(F, nz, 1, -1)},
		{"sin", nil, []*tensor.Tensor{vec(F, nz, inf, nan)}, vec(F, nz, nan, nan)},
		{"cos", nil, []*tensor.Tensor{vec(F, 0, inf)}, vec(F, 1, nan)},
		{"floor", nil, []*tensor.Tensor{vec(F, nz, -0.5, 1.5, inf, nan)}, vec(F, nz, -1, 1, inf, nan)},
		{"ceil", nil, []*tensor.Tensor{vec(F, -0.5, 1.5, -inf)}, vec(F, nz, 2, -inf)},
		{"not", nil, []*tensor.Tensor{vec(ir.Bool, 0, 1)}, vec(ir.Bool, 1, 0)},
		{"not", nil, []*tensor.Tensor{vec(ir.U8, 0, 255)}, vec(ir.U8, 255, 0)},
		{"not", nil, []*tensor.Tensor{vec(I, 0, -1)}, vec(I, -1, 0)},
	})
}

func TestBinary(t *testing.T) {
	F, I := ir.F32, ir.I32
	bin := func(op string, d ir.DType, x, y, want []float64) evalCase {
		wd := d
		if strings.Contains("eq ne lt le gt ge", op) {
			wd = ir.Bool
		}
		return evalCase{op, nil, []*tensor.Tensor{vec(d, x...), vec(d, y...)}, vec(wd, want...)}
	}
	l := func(v ...float64) []float64 { return v }
	runEvalCases(t, []evalCase{
		bin("add", F, l(inf, nz, nz, 1), l(-inf, nz, 0, 0x1p-24), l(nan, nz, 0, 1)),                           // 1+2^-24 ties to even
		bin("add", F, l(1), l(0x1p-24+0x1p-47), l(1+0x1p-23)),                                                 // one rounding, as in f32
		bin("add", ir.F16, l(1, 1+0x1p-10), l(0x1p-11, 0x1p-11), l(1, 1+0x1p-9)),                              // ties to even
		bin("add", ir.BF16, l(1, 1+0x1p-7, 0x1p127*1.5), l(0x1p-8, 0x1p-8, 0x1p127*1.5), l(1, 1+0x1p-6, inf)), // overflow to inf
		bin("add", ir.I8, l(127, -128), l(1, -1), l(-128, 127)),
		bin("sub", F, l(inf, 0, 0), l(inf, 0, nz), l(nan, 0, 0)),
		bin("sub", ir.U8, l(0), l(1), l(255)),
		bin("mul", F, l(0, nz, 3e38, nz), l(inf, 3, 10, nz), l(nan, nz, inf, 0)),
		bin("mul", I, l(65536, -3), l(65536, 7), l(0, -21)),
		bin("div", F, l(1, -1, 0, 1, nan), l(0, 0, 0, nz, 1), l(inf, -inf, nan, -inf, nan)),
		bin("div", I, l(7, -7, 5, math.MinInt32, 0), l(-2, 2, 0, -1, 0), l(-3, -3, 0, math.MinInt32, 0)),
		bin("pow", F, l(nan, -8, 0, nz, 2, 1), l(0, 1.0/3, -1, -1, 10, nan), l(1, nan, inf, -inf, 1024, 1)),
		bin("max", F, l(nan, 1, nz, 0, -inf), l(1, nan, 0, nz, -1), l(nan, nan, 0, 0, -1)),
		bin("min", F, l(nan, 1, nz, 0, inf), l(1, nan, 0, nz, 1), l(nan, nan, nz, nz, 1)),
		bin("max", ir.I64, l(-5, 3), l(2, -9), l(2, 3)),
		bin("min", ir.U8, l(5, 3), l(2, 9), l(2, 3)),
		bin("eq", F, l(nan, nz, 1), l(nan, 0, 2), l(0, 1, 0)),
		bin("ne", F, l(nan, nz, 1), l(nan, 0, 2), l(1, 0, 1)),
		bin("lt", F, l(nz, nan, 1), l(0, 1, 2), l(0, 0, 1)),
		bin("le", F, l(nz, nan, 2), l(0, nan, 1), l(1, 0, 0)),
		bin("gt", I, l(3, -1), l(2, 0), l(1, 0)),
		bin("ge", ir.Bool, l(1, 0), l(1, 1), l(1, 0)),
		bin("and", ir.Bool, l(1, 1, 0), l(1, 0, 0), l(1, 0, 0)),
		bin("or", ir.Bool, l(1, 1, 0), l(1, 0, 0), l(1, 1, 0)),
		bin("and", I, l(12, -1), l(10, 7), l(8, 7)),
		bin("or", I, l(12), l(10), l(14)),
		{"select", nil, []*tensor.Tensor{vec(ir.Bool, 1, 0, 1), vec(F, 1, 2, 3), vec(F, nan, 20, nan)}, vec(F, 1, 20, 3)},
	})
}

func TestCast(t *testing.T) {
	cast := func(x *tensor.Tensor, to ir.DType, want ...float64) evalCase {
		return evalCase{"cast", ir.Attrs{"to": to}, []*tensor.Tensor{x}, vec(to, want...)}
	}
	big := &tensor.Tensor{Type: ir.T(ir.I64, 3), I: []int64{1<<60 + 1<<52 + 1, 1<<60 + 1<<52, math.MaxInt64}}
	runEvalCases(t, []evalCase{
		cast(vec(ir.F32, 2.9, -2.9, nan, 1e10, -1e10, inf, nz), ir.I32, 2, -2, 0, math.MaxInt32, math.MinInt32, math.MaxInt32, 0),
		cast(vec(ir.F32, -1, 300, 255.9, -inf), ir.U8, 0, 255, 255, 0),
		{"cast", ir.Attrs{"to": ir.I64}, []*tensor.Tensor{vec(ir.F64, 1e300, -1e300, 0x1p62, 0x1p63)},
			&tensor.Tensor{Type: ir.T(ir.I64, 4), I: []int64{math.MaxInt64, math.MinInt64, 1 << 62, math.MaxInt64}}},
		cast(vec(ir.F32, nan, 0, nz, 0.1, -inf), ir.Bool, 1, 0, 0, 1, 1),
		cast(vec(ir.I32, -1, 256, 0), ir.U8, 255, 0, 0),
		cast(vec(ir.I64, 5, 0, -3), ir.Bool, 1, 0, 1),
		cast(vec(ir.Bool, 1, 0), ir.F16, 1, 0),
		cast(vec(ir.I64, 1<<24+1, 1<<24+3), ir.F32, 1<<24, 1<<24+4),
		cast(vec(ir.F64, 65520, 65519.99, 1e-8, 0.1), ir.F16, inf, 65504, 0, 0.0999755859375),
		cast(vec(ir.F64, 1+0x1p-8+0x1p-30), ir.BF16, 1+0x1p-7), // above the tie: rounds up, no double rounding via f32
		// 2^60+2^52+1 lies just above a bf16 tie; float64(n) would land on the tie and round to even.
		{"cast", ir.Attrs{"to": ir.BF16}, []*tensor.Tensor{big}, vec(ir.BF16, 1<<60+1<<53, 1<<60, 0x1p63)},
	})
}

func TestReduce(t *testing.T) {
	F := ir.F32
	m := tt(F, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	ax := func(keep bool, axes ...int) ir.Attrs { return ir.Attrs{"axes": axes, "keepdims": keep} }
	empty := tt(F, []int{2, 0})
	runEvalCases(t, []evalCase{
		{"reduce_sum", ax(false, 1), []*tensor.Tensor{m}, vec(F, 6, 15)},
		{"reduce_sum", ax(true, 0), []*tensor.Tensor{m}, tt(F, []int{1, 3}, 5, 7, 9)},
		{"reduce_sum", ax(false, 0, 1), []*tensor.Tensor{m}, tt(F, []int{}, 21)},
		{"reduce_prod", ax(false, 1), []*tensor.Tensor{m}, vec(F, 6, 120)},
		{"reduce_max", ax(false, 0), []*tensor.Tensor{m}, vec(F, 4, 5, 6)},
		{"reduce_min", ax(false, 1), []*tensor.Tensor{m}, vec(F, 1, 4)},
		{"reduce_sum", ax(false, 1), []*tensor.Tensor{empty}, vec(F, 0, 0)},
		{"reduce_prod", ax(false, 1), []*tensor.Tensor{empty}, vec(F, 1, 1)},
		{"reduce_max", ax(false, 1), []*tensor.Tensor{empty}, vec(F, -inf, -inf)},
		{"reduce_min", ax(false, 1), []*tensor.Tensor{empty}, vec(F, inf, inf)},
		{"reduce_max", ax(false, 1), []*tensor.Tensor{tt(ir.I32, []int{1, 0})}, vec(ir.I32, math.MinInt32)},
		{"reduce_min", ax(false, 1), []*tensor.Tensor{tt(ir.U8, []int{1, 0})}, vec(ir.U8, 255)},
		{"reduce_max", ax(false, 0), []*tensor.Tensor{vec(F, 1, nan, 2)}, tt(F, []int{}, nan)},
		{"reduce_min", ax(false, 0), []*tensor.Tensor{vec(F, nan, 1)}, tt(F, []int{}, nan)},
		{"reduce_max", ax(false, 0), []*tensor.Tensor{vec(F, nz, 0, nz)}, tt(F, []int{}, 0)},
		{"reduce_min", ax(false, 0), []*tensor.Tensor{vec(F, 0, nz, 0)}, tt(F, []int{}, nz)},
		{"reduce_sum", ax(false, 0), []*tensor.Tensor{vec(F, nz, nz)}, tt(F, []int{}, 0)},
		{"reduce_sum", ax(false, 0), []*tensor.Tensor{vec(F, inf, -inf)}, tt(F, []int{}, nan)},
		// Accumulated in float64 and rounded once: f16 adding one at a time would stay at 1.
		{"reduce_sum", ax(false, 0), []*tensor.Tensor{vec(ir.F16, 1, 0x1p-11, 0x1p-11)}, tt(ir.F16, []int{}, 1+0x1p-10)},
		// f32: 2^24 + 1 + 1 is 2^24 in f32 steps, 2^24+2 in float64.
		{"reduce_sum", ax(false, 0), []*tensor.Tensor{vec(F, 1<<24, 1, 1)}, tt(F, []int{}, 1<<24+2)},
		{"reduce_sum", ax(false, 0), []*tensor.Tensor{vec(ir.I8, 100, 100)}, tt(ir.I8, []int{}, -56)},
		{"reduce_prod", ax(false, 0), []*tensor.Tensor{vec(ir.I32, 65536, 65536, 3)}, tt(ir.I32, []int{}, 0)},
		{"reduce_sum", ax(false, 1), []*tensor.Tensor{tt(ir.F64, []int{2, 2, 2}, 1, 2, 3, 4, 5, 6, 7, 8)}, tt(ir.F64, []int{2, 2}, 4, 6, 12, 14)},
	})
}

func TestMovement(t *testing.T) {
	F := ir.F32
	m := tt(F, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	runEvalCases(t, []evalCase{
		{"reshape", ir.Attrs{"shape": []int{3, 2}}, []*tensor.Tensor{m}, tt(F, []int{3, 2}, 1, 2, 3, 4, 5, 6)},
		{"transpose", ir.Attrs{"perm": []int{1, 0}}, []*tensor.Tensor{m}, tt(F, []int{3, 2}, 1, 4, 2, 5, 3, 6)},
		{"transpose", ir.Attrs{"perm": []int{1, 2, 0}}, []*tensor.Tensor{tt(F, []int{2, 1, 2}, 1, 2, 3, 4)}, tt(F, []int{1, 2, 2}, 1, 3, 2, 4)},
		{"broadcast_in_dim", ir.Attrs{"shape": []int{2, 3}, "dims": []int{1}}, []*tensor.Tensor{vec(F, 1, 2, 3)}, tt(F, []int{2, 3}, 1, 2, 3, 1, 2, 3)},
		{"broadcast_in_dim", ir.Attrs{"shape": []int{2, 3}, "dims": []int{0, 1}}, []*tensor.Tensor{tt(F, []int{2, 1}, 1, 2)}, tt(F, []int{2, 3}, 1, 1, 1, 2, 2, 2)},
		{"broadcast_in_dim", ir.Attrs{"shape": []int{3, 2}, "dims": []int{1, 0}}, []*tensor.Tensor{m}, tt(F, []int{3, 2}, 1, 4, 2, 5, 3, 6)},
		{"broadcast_in_dim", ir.Attrs{"shape": []int{2}, "dims": []int{}}, []*tensor.Tensor{tt(ir.I64, []int{}, 7)}, vec(ir.I64, 7, 7)},
		{"slice", ir.Attrs{"start": []int{0, 1}, "limit": []int{2, 3}}, []*tensor.Tensor{m}, tt(F, []int{2, 2}, 2, 3, 5, 6)},
		{"slice", ir.Attrs{"start": []int{1, 0}, "limit": []int{2, 3}, "stride": []int{1, 2}}, []*tensor.Tensor{m}, tt(F, []int{1, 2}, 4, 6)},
		{"slice", ir.Attrs{"start": []int{1, 1}, "limit": []int{1, 3}}, []*tensor.Tensor{m}, tt(F, []int{0, 2})},
		{"concat", ir.Attrs{"axis": 1}, []*tensor.Tensor{m, tt(F, []int{2, 1}, 7, 8)}, tt(F, []int{2, 4}, 1, 2, 3, 7, 4, 5, 6, 8)},
		{"concat", ir.Attrs{"axis": 0}, []*tensor.Tensor{m, tt(F, []int{1, 3}, 7, 8, 9)}, tt(F, []int{3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		{"pad", ir.Attrs{"low": []int{1, 0}, "high": []int{0, 1}, "value": -1}, []*tensor.Tensor{m}, tt(F, []int{3, 4}, -1, -1, -1, -1, 1, 2, 3, -1, 4, 5, 6, -1)},
		{"pad", ir.Attrs{"low": []int{1}, "high": []int{1}, "value": 0.1}, []*tensor.Tensor{vec(ir.F16, 1)}, vec(ir.F16, 0.0999755859375, 1, 0.0999755859375)},
		{"pad", ir.Attrs{"low": []int{1}, "high": []int{0}, "value": -1.5}, []*tensor.Tensor{vec(ir.I8, 1)}, vec(ir.I8, -1, 1)},
		{"pad", ir.Attrs{"low": []int{1}, "high": []int{0}, "value": 300}, []*tensor.Tensor{vec(ir.U8, 1)}, vec(ir.U8, 255, 1)}, // saturates, as cast does
		{"gather", nil, []*tensor.Tensor{tt(F, []int{3, 2}, 1, 2, 3, 4, 5, 6), tt(ir.I32, []int{2, 2}, 2, 0, 1, 2)}, tt(F, []int{2, 2, 2}, 5, 6, 1, 2, 3, 4, 5, 6)},
		{"gather", nil, []*tensor.Tensor{vec(ir.I64, 10, 20, 30), vec(ir.I64, 1)}, vec(ir.I64, 20)},
		{"iota", ir.Attrs{"shape": []int{2, 3}, "dim": 1, "dtype": ir.I64}, nil, tt(ir.I64, []int{2, 3}, 0, 1, 2, 0, 1, 2)},
		{"iota", ir.Attrs{"shape": []int{2, 3}, "dim": 0, "dtype": F}, nil, tt(F, []int{2, 3}, 0, 0, 0, 1, 1, 1)},
		{"constant", ir.Attrs{"shape": []int{2, 2}, "dtype": ir.F16, "value": []float64{0.1}}, nil, tt(ir.F16, []int{2, 2}, 0.1, 0.1, 0.1, 0.1)},
		{"constant", ir.Attrs{"shape": []int{3}, "dtype": ir.I32, "value": []int{1, -2, 3}}, nil, vec(ir.I32, 1, -2, 3)},
		{"constant", ir.Attrs{"shape": []int{}, "dtype": ir.Bool, "value": []float64{1}}, nil, tt(ir.Bool, []int{}, 1)},
	})
	_, err := apply("gather", nil, tt(F, []int{3, 2}), vec(ir.I64, 0, -1))
	if want := "index -1 (element 1 of the indices) is out of range [0, 3) for table f32[3,2]"; err == nil || err.Error() != want {
		t.Errorf("gather out of range: got %v, want %s", err, want)
	}
}

func TestPoolValues(t *testing.T) {
	F := ir.F32
	x := tt(F, []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, nan)
	k2 := func(extra ...any) ir.Attrs {
		a := ir.Attrs{"kernel": []int{2, 2}, "stride": []int{1, 1}}
		for i := 0; i < len(extra); i += 2 {
			a[extra[i].(string)] = extra[i+1]
		}
		return a
	}
	runEvalCases(t, []evalCase{
		{"max_pool2d", k2(), []*tensor.Tensor{x}, tt(F, []int{1, 1, 2, 2}, 5, 6, 8, nan)},
		{"avg_pool2d", k2(), []*tensor.Tensor{x}, tt(F, []int{1, 1, 2, 2}, 3, 4, 6, nan)},
		{"max_pool2d", ir.Attrs{"kernel": []int{2, 2}, "padding": []int{1, 1}}, []*tensor.Tensor{tt(F, []int{1, 1, 2, 2}, -1, -2, -3, -4)},
			tt(F, []int{1, 1, 2, 2}, -1, -2, -3, -4)},
		{"avg_pool2d", ir.Attrs{"kernel": []int{2, 2}, "padding": []int{1, 1}}, []*tensor.Tensor{tt(F, []int{1, 1, 2, 2}, 4, 8, 12, 16)},
			tt(F, []int{1, 1, 2, 2}, 1, 2, 3, 4)},
		{"avg_pool2d", ir.Attrs{"kernel": []int{2, 2}, "padding": []int{1, 1}, "count_include_pad": false}, []*tensor.Tensor{tt(F, []int{1, 1, 2, 2}, 4, 8, 12, 16)},
			tt(F, []int{1, 1, 2, 2}, 4, 8, 12, 16)},
		{"avg_pool2d", ir.Attrs{"kernel": []int{1, 3}}, []*tensor.Tensor{tt(F, []int{1, 1, 1, 3}, 1, 1, 2)}, tt(F, []int{1, 1, 1, 1}, float64(float32(4.0/3)))},
	})
}

func TestContractionValues(t *testing.T) {
	F := ir.F32
	runEvalCases(t, []evalCase{
		{"dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}},
			[]*tensor.Tensor{tt(F, []int{2, 3}, 1, 2, 3, 4, 5, 6), tt(F, []int{3, 2}, 7, 8, 9, 10, 11, 12)}, tt(F, []int{2, 2}, 58, 64, 139, 154)},
		{"dot_general", ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{1}},
			[]*tensor.Tensor{tt(F, []int{2, 1, 2}, 1, 2, 3, 4), tt(F, []int{2, 2, 1}, 5, 6, 7, 8)}, tt(F, []int{2, 1, 1}, 17, 53)},
		{"dot_general", nil, []*tensor.Tensor{vec(F, 1, 2), vec(F, 3, 4)}, tt(F, []int{2, 2}, 3, 4, 6, 8)}, // outer product
		{"dot_general", ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}},
			[]*tensor.Tensor{vec(ir.I8, 100, 100), vec(ir.I8, 1, 2)}, tt(ir.I8, []int{}, 44)}, // 300 wraps
		{"dot_general", ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}},
			[]*tensor.Tensor{vec(F, 0, 1), vec(F, inf, 1)}, tt(F, []int{}, nan)},
		// f16: 2048 + 1 + 1 accumulated in float64 is 2050; in f16 steps it would stay 2048.
		{"dot_general", ir.Attrs{"lhs_contract": []int{0}, "rhs_contract": []int{0}},
			[]*tensor.Tensor{vec(ir.F16, 2048, 1, 1), vec(ir.F16, 1, 1, 1)}, tt(ir.F16, []int{}, 2050)},
		{"conv2d", nil, []*tensor.Tensor{tt(F, []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9), tt(F, []int{1, 1, 2, 2}, 1, 1, 1, 1)},
			tt(F, []int{1, 1, 2, 2}, 12, 16, 24, 28)},
		{"conv2d", ir.Attrs{"padding": []int{1, 1}, "stride": []int{2, 2}}, []*tensor.Tensor{tt(F, []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9), tt(F, []int{1, 1, 2, 2}, 1, 1, 1, 1)},
			tt(F, []int{1, 1, 2, 2}, 1, 5, 11, 28)},
		// Padding is literally zero: an inf weight that only ever meets padding still gives NaN.
		{"conv2d", ir.Attrs{"padding": []int{0, 1}}, []*tensor.Tensor{tt(F, []int{1, 1, 1, 1}, 2), tt(F, []int{1, 1, 1, 3}, inf, 1, 0)},
			tt(F, []int{1, 1, 1, 1}, nan)},
	})
}
