package paramcheck

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func TestAllZero(t *testing.T) {
	f := func(v ...float64) *tensor.Tensor { return tensor.FromFloats(ir.T(ir.F32, len(v)), v) }
	i := func(v ...int64) *tensor.Tensor {
		x := tensor.New(ir.T(ir.I8, len(v)))
		copy(x.I, v)
		return x
	}
	for _, tc := range []struct {
		name   string
		params map[string]*tensor.Tensor
		want   []string
	}{
		{"none", nil, nil},
		{"float zeros", map[string]*tensor.Tensor{"w": f(0, 0, 0), "b": f(0, 1)}, []string{"w"}},
		{"negative zero is zero", map[string]*tensor.Tensor{"w": f(0, -0.0)}, []string{"w"}},
		{"int zeros", map[string]*tensor.Tensor{"q": i(0, 0), "z": i(0, -3)}, []string{"q"}},
		{"sorted", map[string]*tensor.Tensor{"w2": f(0), "w1": f(0), "a": f(2)}, []string{"w1", "w2"}},
		{"empty is not zero", map[string]*tensor.Tensor{"e": f()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AllZero(tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("AllZero = %q, want %q", got, tc.want)
			}
		})
	}
}

// fatal records NonZero's verdict instead of ending the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper()                        {}
func (f *fatal) Fatalf(format string, a ...any) { f.msg = fmt.Sprintf(format, a...) }

func TestNonZero(t *testing.T) {
	params := map[string]*tensor.Tensor{
		"w": tensor.FromFloats(ir.T(ir.F32, 2), []float64{0, 0}),
		"b": tensor.FromFloats(ir.T(ir.F32, 2), []float64{0, 0}),
		"x": tensor.FromFloats(ir.T(ir.F32, 2), []float64{0, 1}),
	}
	f := &fatal{TB: t}
	NonZero(f, params)
	if want := "params all zeros, so a miscompiled kernel could pass: b, w ("; len(f.msg) < len(want) || f.msg[:len(want)] != want {
		t.Errorf("NonZero said %q", f.msg)
	}
	t.Run("allowed", func(t *testing.T) {
		AllowZero(t, "a test of zero weights", "w")
		t.Run("in a subtest too", func(t *testing.T) {
			f := &fatal{TB: t}
			NonZero(f, params)
			if want := "params all zeros, so a miscompiled kernel could pass: b ("; len(f.msg) < len(want) || f.msg[:len(want)] != want {
				t.Errorf("NonZero said %q", f.msg)
			}
			AllowZero(t, "and zero biases", "b")
			f.msg = ""
			NonZero(f, params)
			if f.msg != "" {
				t.Errorf("NonZero said %q with both allowed", f.msg)
			}
		})
	})
	// The allowance ends with its test.
	f.msg = ""
	NonZero(f, params)
	if f.msg == "" {
		t.Error("an allowance outlived its test")
	}
}

// Randomize gives exactly the params that would be zeros a normal initializer.
func TestRandomize(t *testing.T) {
	g, err := ir.Parse("g.gir", []byte(`graph g {
  input %x : f32[2,3]
  param %none : f32[3]
  param %zeros : f32[3] {init="zeros"}
  param %zero : f32[3] {init="constant", value=0}
  param %half : f32[3] {init="constant", value=0.5}
  param %ones : f32[3] {init="ones"}
  param %u : f32[3] {init="uniform", low=-1, high=1}
  param %q : i8[4]
  %0 = broadcast_in_dim(%none) {shape=[2,3], dims=[1]} : f32[2,3]
  %1 = add(%x, %0) : f32[2,3]
  output y = %1
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Randomize(g, 0.1), []string{"none", "zeros", "zero", "q"}; !slices.Equal(got, want) {
		t.Errorf("Randomize = %q, want %q", got, want)
	}
	_, params, err := tensor.SeededValues(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	if z := AllZero(params); len(z) != 0 {
		t.Errorf("all zeros after Randomize: %q", z)
	}
	if got := params["half"].F; got[0] != 0.5 {
		t.Errorf("a nonzero constant changed: %v", got)
	}
}
