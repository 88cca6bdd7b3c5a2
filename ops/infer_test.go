package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func TestInfer(t *testing.T) {
	f32 := func(s ...int) ir.Type { return ir.T(ir.F32, s...) }
	mm := ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}
	for _, c := range []struct {
		op   string
		args []ir.Type
		a    ir.Attrs
		want string // the result type, or the error
	}{
		// Table-level checks.
		{"frobnicate", nil, nil, `unknown op "frobnicate"`},
		{"add", []ir.Type{f32(2)}, nil, "add: takes 2 operands, have 1"},
		{"concat", nil, ir.Attrs{"axis": 0}, "concat: needs at least one operand"},
		{"cast", []ir.Type{f32(2)}, nil, "cast: missing attribute to"},
		{"cast", []ir.Type{f32(2)}, ir.Attrs{"to": "f16"}, `cast: attribute to has the wrong kind ("f16")`},
		{"relu", []ir.Type{f32(2)}, ir.Attrs{"alpha": 1.0}, "relu: unknown attribute alpha"},
		// Elementwise.
		{"exp", []ir.Type{f32(2, 3)}, nil, "f32[2,3]"},
		{"exp", []ir.Type{ir.T(ir.I32, 2)}, nil, "exp: wants a float type, have i32[2]"},
		{"neg", []ir.Type{ir.T(ir.I8, 2)}, nil, "i8[2]"},
		{"abs", []ir.Type{ir.T(ir.Bool, 2)}, nil, "abs: wants a float or integer type, have bool[2]"},
		{"not", []ir.Type{ir.T(ir.Bool, 2)}, nil, "bool[2]"},
		{"not", []ir.Type{f32(2)}, nil, "not: wants a bool or integer type, have f32[2]"},
		{"add", []ir.Type{f32(2, 3), f32(2, 3)}, nil, "f32[2,3]"},
		{"add", []ir.Type{f32(2, 3), f32(3)}, nil, "add: operand types differ: f32[2,3] and f32[3]"},
		{"add", []ir.Type{f32(2), ir.T(ir.F16, 2)}, nil, "add: operand types differ: f32[2] and f16[2]"},
		{"add", []ir.Type{ir.T(ir.Bool, 2), ir.T(ir.Bool, 2)}, nil, "add: wants a float or integer type, have bool[2]"},
		{"pow", []ir.Type{ir.T(ir.I32, 2), ir.T(ir.I32, 2)}, nil, "pow: wants a float type, have i32[2]"},
		{"lt", []ir.Type{f32(4), f32(4)}, nil, "bool[4]"},
		{"eq", []ir.Type{ir.T(ir.Bool), ir.T(ir.Bool)}, nil, "bool[]"},
		{"and", []ir.Type{ir.T(ir.I64, 2), ir.T(ir.I64, 2)}, nil, "i64[2]"},
		{"or", []ir.Type{f32(2), f32(2)}, nil, "or: wants a bool or integer type, have f32[2]"},
		{"select", []ir.Type{ir.T(ir.Bool, 2), f32(2), f32(2)}, nil, "f32[2]"},
		{"select", []ir.Type{f32(2), f32(2), f32(2)}, nil, "select: predicate must be bool, have f32[2]"},
		{"select", []ir.Type{ir.T(ir.Bool, 2), f32(2), ir.T(ir.F16, 2)}, nil, "select: branch types differ: f32[2] and f16[2]"},
		{"select", []ir.Type{ir.T(ir.Bool, 3), f32(2), f32(2)}, nil, "select: predicate shape differs from the branches: bool[3] and f32[2]"},
		{"cast", []ir.Type{f32(2)}, ir.Attrs{"to": ir.BF16}, "bf16[2]"},
		{"cast", []ir.Type{f32(2)}, ir.Attrs{"to": ir.Invalid}, "cast: invalid target dtype invalid"},
		// Reductions.
		{"reduce_sum", []ir.Type{f32(2, 3, 4)}, ir.Attrs{"axes": []int{0, 2}}, "f32[3]"},
		{"reduce_max", []ir.Type{f32(2, 3, 4)}, ir.Attrs{"axes": []int{1}, "keepdims": true}, "f32[2,1,4]"},
		{"reduce_min", []ir.Type{f32(2, 3)}, ir.Attrs{"axes": []int{}}, "f32[2,3]"},
		{"reduce_sum", []ir.Type{f32(2, 3)}, ir.Attrs{"axes": []int{4}}, "reduce_sum: axis 4 out of range for f32[2,3]"},
		{"reduce_sum", []ir.Type{f32(2, 3)}, ir.Attrs{"axes": []int{-1}}, "reduce_sum: axis -1 out of range for f32[2,3]"},
		{"reduce_prod", []ir.Type{f32(2, 3)}, ir.Attrs{"axes": []int{1, 0}}, "reduce_prod: axes [1,0] must be sorted and unique"},
		{"reduce_prod", []ir.Type{ir.T(ir.Bool, 2)}, ir.Attrs{"axes": []int{0}}, "reduce_prod: wants a float or integer type, have bool[2]"},
		// dot_general.
		{"dot_general", []ir.Type{f32(64, 784), f32(784, 10)}, mm, "f32[64,10]"},
		{"dot_general", []ir.Type{f32(64, 784), f32(128, 10)}, mm, "dot_general: inner dimensions differ: f32[64,784] and f32[128,10]"},
		{"dot_general", []ir.Type{f32(8, 4, 5, 6), f32(8, 6, 7)},
			ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{3}, "rhs_contract": []int{1}}, "f32[8,4,5,7]"},
		{"dot_general", []ir.Type{f32(3, 4), f32(5, 6)}, nil, "f32[3,4,5,6]"},
		{"dot_general", []ir.Type{f32(2, 3), f32(3, 2)}, ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{1}}, "f32[2,3,3]"},
		{"dot_general", []ir.Type{f32(2, 3), f32(4, 3)}, ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}},
			"dot_general: batch dimensions differ: f32[2,3] and f32[4,3]"},
		{"dot_general", []ir.Type{f32(2, 3), f32(3, 2)}, ir.Attrs{"lhs_contract": []int{1}}, "dot_general: lhs_contract [1] and rhs_contract [] differ in length"},
		{"dot_general", []ir.Type{f32(2, 3), f32(3, 2)}, ir.Attrs{"lhs_contract": []int{2}, "rhs_contract": []int{0}}, "dot_general: axis 2 out of range for f32[2,3]"},
		{"dot_general", []ir.Type{f32(3, 3), f32(3, 3)}, ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{0}, "rhs_contract": []int{1}},
			"dot_general: batch and contracting dims [0,0] name axis 0 twice"},
		{"dot_general", []ir.Type{f32(2, 3), ir.T(ir.F16, 3, 2)}, mm, "dot_general: operand dtypes differ: f32[2,3] and f16[3,2]"},
		// conv2d.
		{"conv2d", []ir.Type{f32(64, 3, 28, 28), f32(16, 3, 3, 3)}, ir.Attrs{"padding": []int{1, 1}}, "f32[64,16,28,28]"},
		{"conv2d", []ir.Type{f32(1, 4, 10, 9), f32(6, 2, 3, 2)},
			ir.Attrs{"stride": []int{2, 3}, "padding": []int{1, 0}, "dilation": []int{2, 1}, "groups": 2}, "f32[1,6,4,3]"},
		{"conv2d", []ir.Type{f32(1, 3, 28), f32(16, 3, 3, 3)}, nil, "conv2d: input must be 4-D (NCHW), have f32[1,3,28]"},
		{"conv2d", []ir.Type{f32(1, 3, 8, 8), f32(16, 4, 3, 3)}, nil,
			"conv2d: weight has 4 input channels, want 3 (input channels/groups): f32[1,3,8,8] and f32[16,4,3,3]"},
		{"conv2d", []ir.Type{f32(1, 4, 8, 8), f32(6, 2, 3, 3)}, ir.Attrs{"groups": 4},
			"conv2d: groups 4 must divide input channels and output channels: f32[1,4,8,8] and f32[6,2,3,3]"},
		{"conv2d", []ir.Type{f32(1, 3, 8, 8), f32(4, 3, 3, 3)}, ir.Attrs{"stride": []int{0, 1}}, "conv2d: stride [0,1] must be at least 1"},
		{"conv2d", []ir.Type{f32(1, 3, 8, 8), f32(4, 3, 3, 3)}, ir.Attrs{"padding": []int{1}}, "conv2d: padding must have 2 elements, have [1]"},
		{"conv2d", []ir.Type{f32(1, 3, 4, 4), f32(4, 3, 3, 3)}, ir.Attrs{"dilation": []int{2, 2}},
			"conv2d: window 3x3 (dilation [2,2]) is larger than the padded input f32[1,3,4,4]"},
		{"conv2d", []ir.Type{ir.T(ir.I32, 1, 3, 4, 4), ir.T(ir.I32, 4, 3, 3, 3)}, nil, "conv2d: wants a float type, have i32[1,3,4,4]"},
		// Pooling.
		{"max_pool2d", []ir.Type{f32(64, 16, 28, 28)}, ir.Attrs{"kernel": []int{2, 2}}, "f32[64,16,14,14]"},
		{"avg_pool2d", []ir.Type{f32(1, 1, 7, 7)}, ir.Attrs{"kernel": []int{3, 3}, "stride": []int{2, 2}, "padding": []int{1, 1}}, "f32[1,1,4,4]"},
		{"max_pool2d", []ir.Type{f32(1, 1, 7, 7)}, ir.Attrs{"kernel": []int{2, 2}, "padding": []int{2, 0}}, "max_pool2d: padding [2,0] must be at most half the kernel [2,2]"},
		{"max_pool2d", []ir.Type{f32(1, 1, 7, 7)}, ir.Attrs{}, "max_pool2d: missing attribute kernel"},
		// Movement.
		{"reshape", []ir.Type{f32(64, 32, 7, 7)}, ir.Attrs{"shape": []int{64, 1568}}, "f32[64,1568]"},
		{"reshape", []ir.Type{f32(2, 3)}, ir.Attrs{"shape": []int{4}}, "reshape: cannot reshape f32[2,3] (6 elements) to [4] (4 elements)"},
		{"reshape", []ir.Type{f32(2, 3)}, ir.Attrs{"shape": []int{-1, 6}}, "reshape: negative dimension in shape [-1,6]"},
		{"transpose", []ir.Type{f32(2, 3, 4)}, ir.Attrs{"perm": []int{2, 0, 1}}, "f32[4,2,3]"},
		{"transpose", []ir.Type{f32(2, 3)}, ir.Attrs{"perm": []int{0}}, "transpose: perm [0] has 1 entries, f32[2,3] has rank 2"},
		{"transpose", []ir.Type{f32(2, 3)}, ir.Attrs{"perm": []int{1, 1}}, "transpose: perm [1,1] name axis 1 twice"},
		{"broadcast_in_dim", []ir.Type{f32(3)}, ir.Attrs{"shape": []int{2, 3}, "dims": []int{1}}, "f32[2,3]"},
		{"broadcast_in_dim", []ir.Type{f32(1, 3)}, ir.Attrs{"shape": []int{3, 4}, "dims": []int{1, 0}}, "f32[3,4]"},
		{"broadcast_in_dim", []ir.Type{f32(3)}, ir.Attrs{"shape": []int{2, 4}, "dims": []int{1}},
			"broadcast_in_dim: cannot broadcast f32[3] to [2,4]: dimension 0 (3) maps to 4"},
		{"broadcast_in_dim", []ir.Type{f32(3)}, ir.Attrs{"shape": []int{3}, "dims": []int{1}}, "broadcast_in_dim: axis 1 out of range for f32[3]"},
		{"slice", []ir.Type{f32(10, 4)}, ir.Attrs{"start": []int{1, 0}, "limit": []int{10, 4}, "stride": []int{3, 1}}, "f32[3,4]"},
		{"slice", []ir.Type{f32(10)}, ir.Attrs{"start": []int{5}, "limit": []int{11}}, "slice: bad slice of dimension 0 of f32[10]: start 5, limit 11, stride 1"},
		{"concat", []ir.Type{f32(2, 3), f32(2, 5)}, ir.Attrs{"axis": 1}, "f32[2,8]"},
		{"concat", []ir.Type{f32(2, 3), f32(3, 3)}, ir.Attrs{"axis": 1}, "concat: operands do not fit along axis 1: f32[2,3] and f32[3,3]"},
		{"concat", []ir.Type{f32(2, 3)}, ir.Attrs{"axis": 2}, "concat: axis 2 out of range for f32[2,3]"},
		{"pad", []ir.Type{f32(2, 3)}, ir.Attrs{"low": []int{1, 0}, "high": []int{0, 2}, "value": 0}, "f32[3,5]"},
		{"pad", []ir.Type{f32(2, 3)}, ir.Attrs{"low": []int{-1, 0}, "high": []int{0, 0}}, "pad: negative padding low [-1,0] high [0,0] of f32[2,3]"},
		{"gather", []ir.Type{f32(512, 128), ir.T(ir.I64, 1, 64)}, nil, "f32[1,64,128]"},
		{"gather", []ir.Type{f32(512, 128), f32(1, 64)}, nil, "gather: indices must be integers, have f32[1,64]"},
		{"gather", []ir.Type{f32(), ir.T(ir.I32, 2)}, nil, "gather: table must have rank at least 1, have f32[]"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3)}, ir.Attrs{"scale": 0.5, "mask": "none"}, "f32[2,4,5,3]"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), ir.T(ir.I64, 2), f32(1, 4, 5, 7)},
			ir.Attrs{"scale": 0.5, "mask": "position", "additive": true}, "f32[2,4,5,3]"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 3, 7, 8), f32(2, 3, 7, 3)}, ir.Attrs{"scale": 1, "mask": "causal"}, "attention: 3 KV heads do not divide 4 query heads"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 4, 7, 8), f32(2, 4, 7, 3)}, ir.Attrs{"scale": 1, "mask": "diagonal"}, `attention: mask is "diagonal", want none, causal or position`},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 4, 7, 8), f32(2, 4, 7, 3)}, ir.Attrs{"scale": 1, "mask": "position"}, "attention: takes 4 operands with these attributes, have 3"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 4, 7, 8), f32(2, 4, 7, 3), f32(2)}, ir.Attrs{"scale": 1, "mask": "position"}, "attention: pos must be integers [2], have f32[2]"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 4, 7, 8), f32(2, 4, 7, 3), f32(2, 4, 7, 5)}, ir.Attrs{"scale": 1, "mask": "none", "additive": true}, "attention: bias must be f32[B or 1,H or 1,5,7], have f32[2,4,7,5]"},
		{"attention", []ir.Type{f32(2, 4, 5, 8), f32(2, 4, 7, 6), f32(2, 4, 7, 3)}, ir.Attrs{"scale": 1, "mask": "none"}, "attention: want q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev], have f32[2,4,5,8], f32[2,4,7,6], f32[2,4,7,3]"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 3)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "k"}, "f32[2,2,7,8]"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), ir.T(ir.I64, 2), f32(1, 4, 5, 7), f32(2, 4, 5, 3), f32(2, 4, 5, 3)},
			ir.Attrs{"scale": 0.5, "mask": "position", "additive": true, "wrt": "bias"}, "f32[1,4,5,7]"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 3)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "bias"}, `attention_grad: wrt is "bias", want q, k, v or (with additive) bias`},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 8)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "q"}, "attention_grad: o and do must be f32[2,4,5,3], have f32[2,4,5,3] and f32[2,4,5,8]"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "q"}, "attention_grad: takes 5 operands with these attributes (attention's, o and do[, lse]), have 1"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 3), f32(2, 4, 5)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "q", "lse": true}, "f32[2,4,5,8]"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 3), f32(2, 4, 7)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "q", "lse": true}, "attention_grad: lse must be f32[2,4,5], have f32[2,4,7]"},
		{"attention_lse", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 7, 3)}, ir.Attrs{"scale": 0.5, "mask": "causal"}, "f32[2,4,5]"},
		{"attention_lse", []ir.Type{ir.T(ir.BF16, 2, 4, 5, 8), ir.T(ir.BF16, 2, 2, 7, 8), ir.T(ir.BF16, 2, 2, 7, 3)}, ir.Attrs{"scale": 0.5, "mask": "none"}, "f32[2,4,5]"},
		{"attention_lse", []ir.Type{f32(2, 4, 5, 8), f32(2, 3, 7, 8), f32(2, 3, 7, 3)}, ir.Attrs{"scale": 1, "mask": "causal"}, "attention_lse: 3 KV heads do not divide 4 query heads"},
		{"attention_grad", []ir.Type{f32(2, 4, 5, 8), f32(2, 2, 7, 8), f32(2, 2, 6, 3), f32(2, 4, 5, 3), f32(2, 4, 5, 3)}, ir.Attrs{"scale": 0.5, "mask": "none", "wrt": "q"}, "attention_grad: want q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev], have f32[2,4,5,8], f32[2,2,7,8], f32[2,2,6,3]"},
		{"iota", nil, ir.Attrs{"shape": []int{2, 3}, "dim": 1, "dtype": ir.I64}, "i64[2,3]"},
		{"iota", nil, ir.Attrs{"shape": []int{2, 3}, "dim": 2, "dtype": ir.I64}, "iota: axis 2 out of range for i64[2,3]"},
		{"constant", nil, ir.Attrs{"shape": []int{2, 2}, "dtype": ir.F32, "value": []float64{1}}, "f32[2,2]"},
		{"constant", nil, ir.Attrs{"shape": []int{2}, "dtype": ir.I32, "value": []int{1, 2}}, "i32[2]"},
		{"constant", nil, ir.Attrs{"shape": []int{2}, "dtype": ir.F32, "value": []float64{1, 2, 3}}, "constant: 3 values for f32[2]: want 1 (a splat) or 2"},
		{"constant", nil, ir.Attrs{"shape": []int{}, "dtype": ir.U8, "value": []int{256}}, "constant: value 256 is not a u8"},
		{"constant", nil, ir.Attrs{"shape": []int{}, "dtype": ir.I32, "value": []float64{1.5}}, "constant: value 1.5 is not a i32"},
	} {
		ty, err := Infer(c.op, c.args, c.a)
		got := ty.String()
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s%v %s:\n got %s\nwant %s", c.op, c.args, ir.FormatAttr(c.a.Keys()), got, c.want)
		}
	}
}

// Every op has a doc, a class, inference and semantics.
func TestTableComplete(t *testing.T) {
	want := []string{"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "erf", "sin", "cos", "floor", "ceil", "not",
		"add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "select", "cast",
		"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "dot_general", "conv2d", "max_pool2d", "avg_pool2d",
		"reshape", "transpose", "broadcast_in_dim", "slice", "concat", "pad", "gather", "iota", "constant", "philox_uniform", "custom", "attention", "attention_grad", "attention_lse", "dequantize", "update_slice"}
	if len(All()) != len(want) {
		t.Errorf("%d ops in the table, want %d", len(All()), len(want))
	}
	for _, name := range want {
		op, ok := Lookup(name)
		if !ok || op.Doc == "" || op.Class == 0 || op.Infer == nil || op.Eval == nil {
			t.Errorf("op %s is missing or incomplete", name)
		}
	}
}

// Inference must reject, never panic on, any operands and well-kinded attributes (the DSL passes
// user mistakes straight through), and Eval must compute whatever inference accepts.
func TestInferNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	types := []ir.Type{ir.T(ir.F32), ir.T(ir.F32, 0), ir.T(ir.F32, 3), ir.T(ir.I64, 3), ir.T(ir.Bool, 2, 3),
		ir.T(ir.F16, 2, 3, 4, 5), ir.T(ir.F32, 1, 1, 1, 1), ir.T(ir.I32, 2, 2)}
	ints := func() []int {
		l := make([]int, rng.IntN(5))
		for i := range l {
			l[i] = rng.IntN(8) - 2
		}
		return l
	}
	for _, op := range All() {
		for trial := 0; trial < 2000; trial++ {
			n := op.Arity
			if n == Variadic {
				n = rng.IntN(4)
			}
			args := make([]ir.Type, n)
			for i := range args {
				args[i] = types[rng.IntN(len(types))]
			}
			a := ir.Attrs{}
			for _, s := range op.Attrs {
				if s.Optional && rng.IntN(3) == 0 {
					continue
				}
				switch s.Kind {
				case AttrInt:
					a[s.Name] = rng.IntN(8) - 2
				case AttrInts:
					a[s.Name] = ints()
				case AttrFloat:
					a[s.Name] = rng.NormFloat64()
				case AttrFloats:
					a[s.Name] = []float64{float64(rng.IntN(300) - 10)}
				case AttrBool:
					a[s.Name] = rng.IntN(2) == 0
				case AttrDType:
					a[s.Name] = ir.DType(rng.IntN(11))
				}
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s%v %v: panic: %v", op.Name, args, a, p)
					}
				}()
				ty, err := Infer(op.Name, args, a)
				if err != nil || ty.Shape.NumElements() > 1e5 {
					return
				}
				xs := make([]*tensor.Tensor, len(args))
				for i, at := range args {
					xs[i] = tensor.New(at)
				}
				r, err := Eval(&ir.Value{Op: op.Name, Attrs: a, Type: ty}, xs)
				if err != nil && op.Name != "gather" || err == nil && !r.Type.Equal(ty) { // gather may meet a bad index
					t.Fatalf("%s%v %v: Eval after valid inference: %v", op.Name, args, a, err)
				}
			}()
		}
	}
}
