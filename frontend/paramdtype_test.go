package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestWithParamDType: f32 parameters are declared in the chosen dtype (model.to(dtype)); other
// dtypes and inputs are left alone.
func TestWithParamDType(t *testing.T) {
	for _, tc := range []struct {
		opt  []frontend.Option
		want ir.DType
	}{
		{nil, ir.F32},
		{[]frontend.Option{frontend.WithParamDType(ir.Invalid)}, ir.F32},
		{[]frontend.Option{frontend.WithParamDType(ir.BF16)}, ir.BF16},
		{[]frontend.Option{frontend.WithParamDType(ir.F16)}, ir.F16},
	} {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2)
			w := b.Param("w", ir.T(ir.F32, 2), frontend.Ones())
			n := b.Param("n", ir.T(ir.I64), frontend.Zeros())
			b.Output("y", x.Cast(w.DType()).Mul(w))
			b.Output("n", n)
		}, tc.opt...)
		if err != nil {
			t.Fatal(err)
		}
		if d := g.Lookup("w").Type.DType; d != tc.want {
			t.Errorf("%v: w is %s, want %s", tc.want, d, tc.want)
		}
		if d := g.Lookup("n").Type.DType; d != ir.I64 {
			t.Errorf("%v: n is %s, want i64", tc.want, d)
		}
		if d := g.Lookup("x").Type.DType; d != ir.F32 {
			t.Errorf("%v: input x is %s, want f32", tc.want, d)
		}
	}
}

func TestWithParamDTypeNotFloat(t *testing.T) {
	_, err := frontend.Build("m", func(b *frontend.Builder) {
		b.Output("w", b.Param("w", ir.T(ir.F32, 2), frontend.Ones()))
	}, frontend.WithParamDType(ir.I32))
	if err == nil || !strings.Contains(err.Error(), "float type, not i32") {
		t.Fatalf("err = %v, want the dtype refused", err)
	}
}
