package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestLowerFP8Dots: a dot_general over fp8 operands becomes the f16 one of their casts (one cast
// per operand however many dots read it), with the same reference result bit for bit; graphs
// without one come back unchanged, and the pass cannot be disabled.
func TestLowerFP8Dots(t *testing.T) {
	for _, d := range []string{"f8e4m3", "f8e5m2"} {
		src := `
  input %a : ` + d + `[5,40]
  input %b : ` + d + `[40,7]
  input %s : f16[5,7]
  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f16[5,7]
  %1 = mul(%0, %s) : f16[5,7]
  %2 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f16[5,7]
  output y = %1
  output z = %2`
		g := parse(t, src)
		low := lowerFP8Dots(g)
		if low == g {
			t.Fatal("graph not rewritten")
		}
		text := low.String()
		if strings.Count(text, "cast(") != 2 || strings.Contains(text, "dot_general(%a") {
			t.Errorf("%s: lowered graph:\n%s", d, text)
		}
		for _, v := range low.Values {
			if v.Op == "dot_general" && (v.Args[0].Type.DType != ir.F16 || v.Args[1].Type.DType != ir.F16) {
				t.Errorf("%s: %s", d, low.Format(v))
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		in := map[string]*tensor.Tensor{}
		for _, v := range g.Inputs() {
			x := tensor.New(v.Type)
			for i := range x.F {
				x.F[i] = tensor.RoundFloat(v.Type.DType, (r.Float64()*2-1)*8)
			}
			in[v.Name] = x
		}
		want, err := ref.Run(g, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ref.Run(low, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			if string(w.Bytes()) != string(got[name].Bytes()) {
				t.Errorf("%s: output %s differs after lowering", d, name)
			}
		}
		res, err := Run(g, Options{DisablePasses: []string{"fp8"}})
		if err == nil {
			for _, k := range res.Kernels.Kernels {
				for _, v := range k.Body.Values {
					if v.Op == "dot_general" && v.Args[0].Type.DType.IsFP8() {
						t.Errorf("%s: a kernel keeps an fp8 dot_general", d)
					}
				}
			}
		} else if !strings.Contains(err.Error(), "fp8") {
			t.Errorf("disabling fp8: %v", err)
		}
	}
	plain := parse(t, tiny)
	if lowerFP8Dots(plain) != plain {
		t.Error("a graph without fp8 dots was copied")
	}
}
