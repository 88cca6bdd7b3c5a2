package frontend_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
)

const f32 = frontend.F32

var lineOf = reftest.LineOf

// Mistakes come back from Build as *Error values at the user's line, never as panics.
func TestErrors(t *testing.T) {
	type B = frontend.Builder
	x := func(b *B) *frontend.Tensor { return b.Input("x", f32, 64, 784) }
	one, zeros := frontend.T(f32, 1), frontend.Zeros()
	for _, tc := range []struct {
		f    func(b *B)
		want string // the message after "file:line: "
	}{
		{func(b *B) { x(b).Matmul(b.Param("w", frontend.T(f32, 128, 10), frontend.Zeros())) },
			"matmul: inner dimensions differ: x is f32[64,784], w is f32[128,10]"},
		{func(b *B) { b.Input("x", f32).Relu().Add(b.Input("x", f32)) }, `duplicate name "x": already declared as input at error_test.go:`},
		{func(b *B) { x(b).Relu().Matmul(b.Input("y", f32, 10)) }, "matmul: inner dimensions differ: lhs is f32[64,784], y is f32[10]"},
		{func(b *B) { x(b).Add(b.Input("y", f32, 2, 784)) }, "add: shapes cannot be broadcast together: x is f32[64,784], y is f32[2,784]"},
		{func(b *B) { x(b).Mul(b.Input("y", frontend.I32, 784)) }, "mul: dtypes differ: x is f32[64,784], y is i32[784] (convert one with Cast)"},
		{func(b *B) { x(b).Sum(2) }, "sum: dim 2 out of range for x f32[64,784] (want -2..1)"},
		{func(b *B) { x(b).Softmax(-3) }, "softmax: dim -3 out of range for x f32[64,784] (want -2..1)"},
		{func(b *B) { x(b).Sum(1, -1) }, "sum: dim 1 repeated in [1 -1]"},
		{func(b *B) { x(b).Reshape(3, -1) }, "reshape: shape [3 -1] is invalid for x f32[64,784] (50176 elements)"},
		{func(b *B) { x(b).View(-1, -1) }, "view: only one dim can be -1, have [-1 -1]"},
		{func(b *B) { x(b).Permute(0, 0) }, "permute: dim 0 repeated in [0 0]"},
		{func(b *B) { x(b).Squeeze(0) }, "squeeze: dim 0 of x f32[64,784] has size 64, not 1"},
		{func(b *B) { x(b).Narrow(1, 780, 8) }, "narrow: range [780, 788) is outside dim 1 of x f32[64,784]"},
		{func(b *B) { frontend.Cat(0, x(b), b.Input("y", f32, 64, 10)) }, "cat: tensor 1 does not fit along dim 0: x is f32[64,784], y is f32[64,10]"},
		{func(b *B) { v := x(b); frontend.Where(v, v, v) }, "where: the condition must be bool, x is f32[64,784]"},
		{func(b *B) { b.Lookup("fc1.weight") }, `unknown input or parameter "fc1.weight"`},
		{func(b *B) { b.Param("fc1.weight", one, zeros); b.Lookup("fc2.weight") }, `unknown input or parameter "fc2.weight" (have fc1.weight)`},
		{func(b *B) { b.Param("fc.w", one, zeros); b.Sub("fc").Param("w", one, zeros) }, `duplicate name "fc.w": already declared as parameter at error_test.go:`},
		{func(b *B) { b.Output("y", x(b)); b.Output("y", b.Input("z", f32)) }, "output y declared twice (first at error_test.go:"},
		{func(b *B) { b.Input("bad name", f32) }, `bad input name "bad name": want letters, digits, '_' and '.'`},
		{func(b *B) { b.Input("12", f32) }, `bad input name "12"`},
		{func(b *B) { b.Input("x", f32, -1) }, "input x: negative dimension in [-1]"},
		{func(b *B) { b.Input("x", f32).WithRange(0, 10) }, "WithRange: x f32[] is not an integer input"},
		{func(b *B) { x(b).SetInit(frontend.Zeros()) }, "SetInit: x f32[64,784] is not a parameter"},
		{func(b *B) { var t *frontend.Tensor; b.Output("y", t) }, "output y: nil tensor"},
		{func(b *B) { var t *frontend.Tensor; t.Relu() }, "nil tensor"},
		{func(b *B) { x(b).Cast(frontend.Bool).Exp() }, "exp: wants a float type, have bool[64,784]"},
		{func(b *B) { frontend.Linear(x(b), b.Param("w", frontend.T(f32, 10, 78), zeros), nil) }, "linear: input features differ: x is f32[64,784], w is f32[10,78]"},
		{func(b *B) { frontend.Conv2d(x(b), b.Input("w", f32, 3, 3), nil, frontend.Conv2dOptions{}) }, "conv2d: want a 4-D input [N,C,H,W] and weight [O,C/groups,KH,KW]: x is f32[64,784], w is f32[3,3]"},
		{func(b *B) { x(b).Mean(0).Cast(frontend.I32).Mean() }, "mean: needs a float tensor, input is i32[784] (convert it with Cast)"},
		{func(b *B) { b.Iota(frontend.I32, 2, 3, 4) }, "iota: dim 2 out of range for shape [3,4]"},
		{func(b *B) { b.Tensor([]float64{1, 2}, f32, 3) }, "tensor: 2 values for shape [3], which holds 3"},
		{func(b *B) { b.Full(0.5, frontend.I32, 3) }, "constant 0.5 does not fit the integer type i32[3]"},
		{func(b *B) { frontend.CrossEntropyLoss(x(b), b.Input("labels", f32, 64)) }, "cross_entropy: want logits[N, C] and integer labels[N]"},
		{func(b *B) { b.Fail("custom check: %d", 3) }, "custom check: 3"},
		{func(b *B) { var s []int; _ = s[len(b.Prefix())+1] }, "panic: runtime error: index out of range [1] with length 0"},
		{func(b *B) { panic(errors.New("boom")) }, "panic: boom"},
	} {
		at := lineOf(tc.f)
		g, err := frontend.Build("m", tc.f)
		var fe *frontend.Error
		switch {
		case g != nil || err == nil:
			t.Errorf("%s: no error, want %q", at, tc.want)
		case !errors.As(err, &fe):
			t.Errorf("%s: error %T %v is not a *frontend.Error", at, err, err)
		case fe.Pos != at || !strings.HasPrefix(fe.Msg, tc.want):
			t.Errorf("got  %v\nwant %s: %s", err, at, tc.want)
		}
	}
}

// Errors inside helper functions of the model report the user's line of the call in the helper.
func TestErrorInHelper(t *testing.T) {
	helper := func(b *frontend.Builder) {
		b.Input("x", f32, 2).Add(b.Input("y", f32, 3)) // the failing line
	}
	_, _, line, _ := runtime.Caller(0)
	_, err := frontend.Build("m", func(b *frontend.Builder) { helper(b) })
	want := fmt.Sprintf("error_test.go:%d: add: shapes cannot be broadcast together: x is f32[2], y is f32[3]", line-2)
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// A graph without outputs is an error, not an empty graph.
func TestNoOutputs(t *testing.T) {
	_, err := frontend.Build("m", func(b *frontend.Builder) { b.Input("x", f32) })
	if err == nil || !strings.Contains(err.Error(), "no outputs") {
		t.Errorf("got %v, want a no-outputs error", err)
	}
}

// Every value records the user's position; a PositionFunc replaces the stack walk (as a loader
// that interprets model files does), and an empty position leaves both values and errors
// without one.
func TestPositions(t *testing.T) {
	_, _, line, _ := runtime.Caller(0)
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", f32, 2) // line+2
		b.Output("y", x.Exp())    // line+3
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range g.Values {
		if want := fmt.Sprintf("error_test.go:%d", line+2+i); v.Pos != want {
			t.Errorf("%s at %q, want %q", g.Format(v), v.Pos, want)
		}
	}

	calls := 0
	custom := frontend.WithPosition(func() string { calls++; return "net.go:7" })
	g, err = frontend.Build("m", func(b *frontend.Builder) { b.Output("y", b.Input("x", f32).Exp()) }, custom)
	if err != nil || g.Values[1].Pos != "net.go:7" || calls == 0 {
		t.Errorf("custom position: %v, %v", err, g)
	}
	_, err = frontend.Build("m", func(b *frontend.Builder) { b.Input("x", f32).Matmul(b.Input("y", f32)) }, custom)
	if err == nil || err.Error() != "net.go:7: matmul: both operands need at least one dim: x is f32[], y is f32[]" {
		t.Errorf("custom position error: %v", err)
	}

	none := frontend.WithPosition(func() string { return "" })
	g, err = frontend.Build("m", func(b *frontend.Builder) { b.Output("y", b.Input("x", f32).Exp()) }, none)
	if err != nil || g.Values[1].Pos != "" || strings.Contains(g.String(), "loc(") {
		t.Errorf("no position: %v\n%v", err, g)
	}
	_, err = frontend.Build("m", func(b *frontend.Builder) { b.Input("x", f32, 2).Sum(3) }, none)
	var fe *frontend.Error
	if !errors.As(err, &fe) || fe.Pos != "" || err.Error() != "sum: dim 3 out of range for x f32[2] (want -1..0)" {
		t.Errorf("no position error: %#v", err)
	}
}

// The DSL panics with *Error outside Build too, so a loader can recognise its panics.
func TestPanicValue(t *testing.T) {
	defer func() {
		r := recover()
		if fe, ok := r.(*frontend.Error); !ok || !strings.HasPrefix(fe.Msg, "softmax: dim 5 out of range") {
			t.Errorf("recovered %#v, want a *frontend.Error", r)
		}
	}()
	b := frontend.NewBuilder("m")
	b.Input("x", f32, 3).Softmax(5)
}

// When the DSL is called through reflection, as a Go interpreter calls compiled packages, the
// first frame outside the DSL is not the model's code, so the default position is empty.
func TestPositionThroughReflection(t *testing.T) {
	b := frontend.NewBuilder("m")
	x := b.Input("x", f32, 2)
	y := reflect.ValueOf(x.Relu).Call(nil)[0].Interface().(*frontend.Tensor)
	if pos := y.Value().Pos; pos != "" {
		t.Errorf("position %q through reflection, want none", pos)
	}
	if pos := x.Value().Pos; !strings.HasPrefix(pos, "error_test.go:") {
		t.Errorf("position %q of a direct call, want error_test.go:LINE", pos)
	}
}

// More shape mistakes, each reported at its line.
func TestMoreErrors(t *testing.T) {
	type B = frontend.Builder
	x := func(b *B) *frontend.Tensor { return b.Input("x", f32, 2, 3) }
	for _, tc := range []struct {
		f    func(b *B)
		want string
	}{
		{func(b *B) { x(b).Expand(3) }, "expand: [3] has fewer dims than x f32[2,3]"},
		{func(b *B) { x(b).Expand(2, 4) }, "expand: cannot expand x f32[2,3] to [2 4]: dim 1 has size 3"},
		{func(b *B) { x(b).Chunk(0, 1) }, "chunk: need at least one chunk, have 0"},
		{func(b *B) { x(b).Split(1, 1, 1) }, "split: sizes [1 1] add up to 2, but dim 1 of x f32[2,3] has 3"},
		{func(b *B) { frontend.Stack(0, x(b), b.Input("y", f32, 3, 2)) }, "stack: tensors differ: x is f32[2,3], y is f32[3,2]"},
		{func(b *B) { frontend.Cat(0) }, "cat: no tensors"},
		{func(b *B) { x(b).Pad([]int{1}, []int{1}, 0) }, "pad: want 2 low and high sizes for x f32[2,3], have [1] and [1]"},
		{func(b *B) { x(b).Index(0, 2) }, "index: index 2 is out of range for dim 0 of x f32[2,3]"},
		{func(b *B) { x(b).Unsqueeze(4) }, "unsqueeze: dim 4 out of range for x f32[2,3] (want -3..2)"},
		{func(b *B) { x(b).Permute(1) }, "permute: [1] does not list the 2 dims of x f32[2,3]"},
		{func(b *B) { x(b).Flatten(1, 0) }, "flatten: start dim 1 comes after end dim 0"},
		{func(b *B) { x(b).MaskedFill(b.Input("m", frontend.Bool, 4, 1, 3), 0) }, "masked_fill: mask does not broadcast to the input"},
		{func(b *B) { frontend.LayerNorm(x(b), []int{2}, nil, nil, 1e-5) }, "layer_norm: normalized shape [2] does not match the last dims of x is f32[2,3]"},
		{func(b *B) { frontend.MSELoss(x(b), b.Input("y", f32, 3)) }, "mse_loss: shapes differ: x is f32[2,3], y is f32[3]"},
		{func(b *B) { v := x(b); frontend.Embedding(v, v) }, "embedding: indices must be integers, x is f32[2,3]"},
		{func(b *B) { q := x(b); frontend.ScaledDotProductAttention(q, q.Transpose(0, 1), q, false) }, "scaled_dot_product_attention: want q[..., L, E]"},
		{func(b *B) { frontend.MaxPool2d(x(b), [2]int{2, 2}, frontend.PoolOptions{}) }, "max_pool2d: want a 4-D input [N,C,H,W], x is f32[2,3]"},
	} {
		at := lineOf(tc.f)
		_, err := frontend.Build("m", tc.f)
		var fe *frontend.Error
		if !errors.As(err, &fe) || fe.Pos != at || !strings.HasPrefix(fe.Msg, tc.want) {
			t.Errorf("got  %v\nwant %s: %s", err, at, tc.want)
		}
	}
}
