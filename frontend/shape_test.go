package frontend_test

import (
	"strconv"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// in declares an f32 input with the given dims under a fresh name.
func in(b *frontend.Builder, dims ...int) *frontend.Tensor {
	return b.Input(nextName(), frontend.F32, dims...)
}

var counter int

func nextName() string {
	counter++
	return "in" + strconv.Itoa(counter)
}

// Every method's result type, checked against the op table by the verifier as well.
func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(b *frontend.Builder) *frontend.Tensor
		want string
	}{
		{"neg", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Neg() }, "f32[2,3]"},
		{"exp log sqrt rsqrt", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Exp().Log().Sqrt().Rsqrt() }, "f32[2,3]"},
		{"tanh sigmoid relu erf", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4).Tanh().Sigmoid().Relu().Erf() }, "f32[4]"},
		{"abs sin cos floor ceil", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4).Abs().Sin().Cos().Floor().Ceil() }, "f32[4]"},
		{"gelu silu", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4).Gelu().GeluTanh().Silu() }, "f32[4]"},
		{"add same", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Add(in(b, 2, 3)) }, "f32[2,3]"},
		{"add row", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Add(in(b, 3)) }, "f32[2,3]"},
		{"sub column", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Sub(in(b, 2, 1)) }, "f32[2,3]"},
		{"mul outer", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4, 1).Mul(in(b, 1, 5)) }, "f32[4,5]"},
		{"div rank-up", func(b *frontend.Builder) *frontend.Tensor { return in(b, 5).Div(in(b, 2, 3, 1)) }, "f32[2,3,5]"},
		{"scalar operand", func(b *frontend.Builder) *frontend.Tensor { return in(b).Pow(in(b, 2, 2)) }, "f32[2,2]"},
		{"maximum minimum", func(b *frontend.Builder) *frontend.Tensor { return in(b, 3).Maximum(in(b, 1)).Minimum(in(b, 3)) }, "f32[3]"},
		{"scalars", func(b *frontend.Builder) *frontend.Tensor {
			return in(b, 3).AddScalar(1).SubScalar(2).MulScalar(3).DivScalar(4).PowScalar(2).RSubScalar(1).MaximumScalar(0).MinimumScalar(6)
		}, "f32[3]"},
		{"compare", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Lt(in(b, 3)) }, "bool[2,3]"},
		{"logic", func(b *frontend.Builder) *frontend.Tensor {
			x := in(b, 3)
			return x.Eq(x).Or(x.Ne(x)).And(x.Le(x)).And(x.Ge(x).Not()).Or(x.Gt(x)).Or(x.EqScalar(1)).Or(x.LtScalar(0)).Or(x.GtScalar(0))
		}, "bool[3]"},
		{"where", func(b *frontend.Builder) *frontend.Tensor {
			x := in(b, 2, 3)
			return frontend.Where(x.GtScalar(0), x, in(b, 3))
		}, "f32[2,3]"},
		{"where broadcast cond", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Where(in(b, 4, 1, 1).GtScalar(0), in(b, 3), in(b, 2, 1))
		}, "f32[4,2,3]"},
		{"masked fill", func(b *frontend.Builder) *frontend.Tensor {
			x := in(b, 2, 3)
			return x.MaskedFill(in(b, 3).GtScalar(0), -1)
		}, "f32[2,3]"},
		{"cast", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2).Cast(frontend.I32) }, "i32[2]"},
		{"cast same", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2).Cast(frontend.F32) }, "f32[2]"},
		{"matmul 2x2", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4, 3).Matmul(in(b, 3, 5)) }, "f32[4,5]"},
		{"matmul vec vec", func(b *frontend.Builder) *frontend.Tensor { return in(b, 3).Matmul(in(b, 3)) }, "f32[]"},
		{"matmul mat vec", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4, 3).Matmul(in(b, 3)) }, "f32[4]"},
		{"matmul vec mat", func(b *frontend.Builder) *frontend.Tensor { return in(b, 3).Matmul(in(b, 3, 5)) }, "f32[5]"},
		{"matmul vec batch", func(b *frontend.Builder) *frontend.Tensor { return in(b, 3).Matmul(in(b, 2, 3, 5)) }, "f32[2,5]"},
		{"matmul batch vec", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 4, 3).Matmul(in(b, 3)) }, "f32[2,4]"},
		{"matmul batch mat", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 4, 3).Matmul(in(b, 3, 5)) }, "f32[2,4,5]"},
		{"matmul mat batch", func(b *frontend.Builder) *frontend.Tensor { return in(b, 4, 3).Matmul(in(b, 2, 3, 5)) }, "f32[2,4,5]"},
		{"matmul batch broadcast", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 1, 4, 3).Matmul(in(b, 6, 3, 5)) }, "f32[2,6,4,5]"},
		{"reshape", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Reshape(6, -1) }, "f32[6,4]"},
		{"view", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).View(-1) }, "f32[24]"},
		{"reshape same", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Reshape(2, 3) }, "f32[2,3]"},
		{"flatten", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4, 5).Flatten(1, -1) }, "f32[2,60]"},
		{"flatten middle", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4, 5).Flatten(1, 2) }, "f32[2,12,5]"},
		{"unsqueeze", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Unsqueeze(-1).Unsqueeze(0) }, "f32[1,2,3,1]"},
		{"squeeze", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 1, 3).Squeeze(1) }, "f32[2,3]"},
		{"transpose", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Transpose(0, -1) }, "f32[4,3,2]"},
		{"permute", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Permute(1, 2, 0) }, "f32[3,4,2]"},
		{"T", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).T() }, "f32[3,2]"},
		{"expand", func(b *frontend.Builder) *frontend.Tensor { return in(b, 3, 1).Expand(2, -1, 4) }, "f32[2,3,4]"},
		{"sum", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Sum(-1, 0) }, "f32[3]"},
		{"sum all", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Sum() }, "f32[]"},
		{"sum keepdim", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).SumKeepDim(1) }, "f32[2,1,4]"},
		{"mean", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).Mean(1) }, "f32[2,4]"},
		{"mean keepdim", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3, 4).MeanKeepDim(-1) }, "f32[2,3,1]"},
		{"max", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Max(1) }, "f32[2]"},
		{"max keepdim", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).MaxKeepDim(0) }, "f32[1,3]"},
		{"min", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Min() }, "f32[]"},
		{"min keepdim", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).MinKeepDim(1) }, "f32[2,1]"},
		{"prod", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Prod(0) }, "f32[3]"},
		{"softmax", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Softmax(-1) }, "f32[2,3]"},
		{"log softmax", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).LogSoftmax(0) }, "f32[2,3]"},
		{"slice", func(b *frontend.Builder) *frontend.Tensor { return in(b, 5, 6).Slice(1, 1, -1) }, "f32[5,4]"},
		{"slice clamp", func(b *frontend.Builder) *frontend.Tensor { return in(b, 5, 6).Slice(0, -3, 100) }, "f32[3,6]"},
		{"narrow", func(b *frontend.Builder) *frontend.Tensor { return in(b, 5, 6).Narrow(0, 1, 2) }, "f32[2,6]"},
		{"index", func(b *frontend.Builder) *frontend.Tensor { return in(b, 5, 6, 7).Index(1, -1) }, "f32[5,7]"},
		{"chunk", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 12).Chunk(3, 1)[2] }, "f32[2,4]"},
		{"chunk uneven", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 5).Chunk(2, 1)[1] }, "f32[2,2]"},
		{"split", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 5).Split(1, 1, 4)[1] }, "f32[2,4]"},
		{"cat", func(b *frontend.Builder) *frontend.Tensor { return frontend.Cat(1, in(b, 2, 3), in(b, 2, 5)) }, "f32[2,8]"},
		{"cat one", func(b *frontend.Builder) *frontend.Tensor { return frontend.Cat(-1, in(b, 2, 3)) }, "f32[2,3]"},
		{"stack", func(b *frontend.Builder) *frontend.Tensor { return frontend.Stack(1, in(b, 2, 3), in(b, 2, 3)) }, "f32[2,2,3]"},
		{"stack end", func(b *frontend.Builder) *frontend.Tensor { return frontend.Stack(-1, in(b, 2, 3), in(b, 2, 3)) }, "f32[2,3,2]"},
		{"pad", func(b *frontend.Builder) *frontend.Tensor { return in(b, 2, 3).Pad([]int{0, 1}, []int{1, 2}, 0) }, "f32[3,6]"},
		{"full", func(b *frontend.Builder) *frontend.Tensor { return b.Full(2.5, frontend.F32, 2, 3) }, "f32[2,3]"},
		{"zeros ones", func(b *frontend.Builder) *frontend.Tensor {
			return b.Zeros(frontend.I64, 2).Add(b.Ones(frontend.I64, 2))
		}, "i64[2]"},
		{"tensor", func(b *frontend.Builder) *frontend.Tensor { return b.Tensor([]float64{1, 2, 3, 4}, frontend.F32, 2, 2) }, "f32[2,2]"},
		{"iota", func(b *frontend.Builder) *frontend.Tensor { return b.Iota(frontend.I32, -1, 2, 3) }, "i32[2,3]"},
		{"arange", func(b *frontend.Builder) *frontend.Tensor { return b.Arange(7, frontend.I64) }, "i64[7]"},
		{"linear", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Linear(in(b, 2, 7, 3), in(b, 5, 3), in(b, 5))
		}, "f32[2,7,5]"},
		{"linear no bias", func(b *frontend.Builder) *frontend.Tensor { return frontend.Linear(in(b, 3), in(b, 5, 3), nil) }, "f32[5]"},
		{"conv2d", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Conv2d(in(b, 2, 3, 28, 28), in(b, 16, 3, 3, 3), in(b, 16), frontend.Conv2dOptions{Padding: [2]int{1, 1}})
		}, "f32[2,16,28,28]"},
		{"conv2d stride groups", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Conv2d(in(b, 1, 4, 9, 9), in(b, 8, 2, 3, 3), nil, frontend.Conv2dOptions{Stride: [2]int{2, 2}, Groups: 2})
		}, "f32[1,8,4,4]"},
		{"max pool", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.MaxPool2d(in(b, 2, 3, 28, 28), [2]int{2, 2}, frontend.PoolOptions{})
		}, "f32[2,3,14,14]"},
		{"avg pool", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.AvgPool2d(in(b, 2, 3, 28, 28), [2]int{3, 3}, frontend.PoolOptions{Stride: [2]int{1, 1}, Padding: [2]int{1, 1}, CountExcludePad: true})
		}, "f32[2,3,28,28]"},
		{"embedding", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.Embedding(b.Input("ids", frontend.I64, 2, 5), in(b, 10, 4))
		}, "f32[2,5,4]"},
		{"layer norm", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.LayerNorm(in(b, 2, 3, 4), []int{3, 4}, in(b, 3, 4), in(b, 3, 4), 1e-5)
		}, "f32[2,3,4]"},
		{"attention", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.ScaledDotProductAttention(in(b, 2, 4, 5, 8), in(b, 2, 4, 7, 8), in(b, 2, 4, 7, 3), false)
		}, "f32[2,4,5,3]"},
		{"attention causal broadcast", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.ScaledDotProductAttention(in(b, 2, 4, 5, 8), in(b, 1, 1, 5, 8), in(b, 2, 4, 5, 3), true)
		}, "f32[2,4,5,3]"},
		{"rnn cell", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.RNNCell(in(b, 2, 3), in(b, 2, 4), in(b, 4, 3), in(b, 4, 4), in(b, 4), in(b, 4), true)
		}, "f32[2,4]"},
		{"lstm cell", func(b *frontend.Builder) *frontend.Tensor {
			_, c := frontend.LSTMCell(in(b, 2, 3), in(b, 2, 4), in(b, 2, 4), in(b, 16, 3), in(b, 16, 4), nil, nil)
			return c
		}, "f32[2,4]"},
		{"gru cell", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.GRUCell(in(b, 2, 3), in(b, 2, 4), in(b, 12, 3), in(b, 12, 4), in(b, 12), in(b, 12))
		}, "f32[2,4]"},
		{"rnn time-major", func(b *frontend.Builder) *frontend.Tensor {
			out, _ := frontend.RNN(in(b, 5, 2, 3), nil, []frontend.RNNWeights{{WeightIH: in(b, 4, 3), WeightHH: in(b, 4, 4)}}, false, false)
			return out
		}, "f32[5,2,4]"},
		{"gru unbatched h_n", func(b *frontend.Builder) *frontend.Tensor {
			_, hn := frontend.GRU(in(b, 5, 3), in(b, 1, 4), []frontend.RNNWeights{{WeightIH: in(b, 12, 3), WeightHH: in(b, 12, 4)}}, true)
			return hn
		}, "f32[1,4]"},
		{"mse", func(b *frontend.Builder) *frontend.Tensor { return frontend.MSELoss(in(b, 4, 3), in(b, 4, 3)) }, "f32[]"},
		{"cross entropy", func(b *frontend.Builder) *frontend.Tensor {
			return frontend.CrossEntropyLoss(in(b, 4, 10), b.Input("labels", frontend.I64, 4))
		}, "f32[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("shapes", func(b *frontend.Builder) { b.Output("y", tc.f(b)) })
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Outputs[0].Value.Type.String(); got != tc.want {
				t.Errorf("type %s, want %s\n%s", got, tc.want, g)
			}
		})
	}
}

// Broadcasting inserts one broadcast_in_dim per operand whose shape differs from the result,
// mapping its dims to the trailing dims of the result.
func TestBroadcastNodes(t *testing.T) {
	for _, tc := range []struct {
		a, b   []int
		result string
		bcasts []string // the dims attributes of the broadcasts, in order
	}{
		{[]int{2, 3}, []int{2, 3}, "f32[2,3]", nil},
		{[]int{2, 3}, []int{3}, "f32[2,3]", []string{"[1]"}},
		{[]int{3}, []int{2, 3}, "f32[2,3]", []string{"[1]"}},
		{[]int{2, 1}, []int{1, 3}, "f32[2,3]", []string{"[0,1]", "[0,1]"}},
		{[]int{}, []int{4, 5}, "f32[4,5]", []string{"[]"}},
		{[]int{5, 1, 4}, []int{3, 1}, "f32[5,3,4]", []string{"[0,1,2]", "[1,2]"}},
	} {
		g, err := frontend.Build("bcast", func(b *frontend.Builder) {
			b.Output("y", b.Input("a", frontend.F32, tc.a...).Add(b.Input("b", frontend.F32, tc.b...)))
		})
		if err != nil {
			t.Fatalf("%v + %v: %v", tc.a, tc.b, err)
		}
		var dims []string
		for _, v := range g.Values {
			if v.Op == "broadcast_in_dim" {
				dims = append(dims, ir.FormatAttr(v.Attrs["dims"]))
			}
		}
		if got := g.Outputs[0].Value.Type.String(); got != tc.result || len(dims) != len(tc.bcasts) {
			t.Errorf("%v + %v: %s with broadcasts %v, want %s with %v", tc.a, tc.b, got, dims, tc.result, tc.bcasts)
			continue
		}
		for i := range dims {
			if dims[i] != tc.bcasts[i] {
				t.Errorf("%v + %v: broadcast dims %v, want %v", tc.a, tc.b, dims, tc.bcasts)
			}
		}
		if err := ops.Verify(g); err != nil {
			t.Error(err)
		}
	}
}
