package passes_test

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Under f16 autocast a quantized linear layer dequantizes in f16 with its scales cast once
// (dequantize(q, cast(s), z)), which computes bit for bit what casting the f32 dequantize did
// (cast(dequantize(q, s, z))) when the scales are f16 values: here every f16 scale of a
// checkpoint's range, subnormals, the largest finite, ±inf and NaN among them, against every
// integer and zero point. The decode product (1 row) then dequantizes in its GEMV, as in f32,
// and the prefill one (32 rows) in its tensor-core GEMM; the scale cast is a bind-time kernel.
// Under bf16 the cast stays (rounding the scales to bf16 first would change the weights), and
// both templates read it.
func TestAutocastQuantized(t *testing.T) {
	const n, k, group = 64, 256, 32
	build := func(m int) *ir.Graph {
		g, err := frontend.Build("qlinear", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, m, k)
			w := frontend.Dequantize(b.Param("q", ir.T(ir.U8, n, k/2), frontend.Zeros()), b.Param("s", ir.T(ir.F32, n, k/group), frontend.Zeros()),
				b.Param("z", ir.T(ir.U8, n, k/group), frontend.Zeros()), frontend.Quant{Bits: 4, Group: group, Axis: 1})
			b.Output("y", frontend.Linear(x, w, nil))
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, m := range []int{1, 32} {
		g := build(m)
		f16 := passes.AutocastGraph(g, ir.F16)
		var dq *ir.Value
		for _, v := range f16.Values {
			if v.Op == ops.DequantizeOp {
				dq = v
			}
		}
		if dq == nil || dq.Type.DType != ir.F16 || dq.Args[1].Op != "cast" {
			t.Fatalf("m=%d: no f16 dequantize of cast scales:\n%s", m, f16)
		}
		// Today's form, the cast after the f32 dequantize, computed by the reference.
		before := build(m)
		passes.Autocast(before, ir.BF16) // the cast after the dequantize, as every dtype had it
		for _, v := range before.Values {
			if v.Op == "cast" && v.Type.DType == ir.BF16 {
				v.Type.DType, v.Attrs["to"] = ir.F16, ir.F16
			}
			if v.Op == "dot_general" {
				v.Type.DType = ir.F16
			}
		}
		in, params := quantInputs(g, uint64(m))
		want, err := ref.Run(before, in, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ref.Run(f16, in, params)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want["y"].F {
			if math.Float64bits(got["y"].F[i]) != math.Float64bits(w) && !(math.IsNaN(w) && math.IsNaN(got["y"].F[i])) {
				t.Fatalf("m=%d: y[%d] = %v under the rewrite, %v with the cast after", m, i, got["y"].F[i], w)
			}
		}
		for _, dt := range []ir.DType{ir.F16, ir.BF16} {
			res, err := passes.Run(g, passes.Options{VerifyEach: true, AMP: dt})
			if err != nil {
				t.Fatal(err)
			}
			// bf16 keeps the cast, which the GEMV and the GEMM read with the dequantize.
			if dequantizesApart(res.Kernels) {
				t.Errorf("m=%d, %s: a per-run kernel dequantizes apart from the product", m, dt)
			}
		}
	}
}

// dequantizesApart reports whether a per-run kernel computes a dequantize without the product
// that reads it.
func dequantizesApart(kg *passes.KernelGraph) bool {
	for _, k := range kg.Kernels {
		var dq, dot bool
		for _, v := range k.Body.Values {
			dq = dq || v.Op == ops.DequantizeOp
			dot = dot || v.Op == "dot_general"
		}
		if dq && !dot && !k.BindTime {
			return true
		}
	}
	return false
}

// quantInputs is x and the layer's parameters: every nibble, every zero point and, in turn,
// f16 scales from the smallest subnormal to the largest finite, ±inf and NaN.
func quantInputs(g *ir.Graph, seed uint64) (in, params map[string]*tensor.Tensor) {
	in, params = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	special := []float64{math.Ldexp(1, -24), math.Ldexp(1023, -24), math.Ldexp(1, -14), 65504, math.Inf(1), math.Inf(-1), math.NaN(), -0.0}
	for _, v := range g.Values {
		if v.Op != ir.OpInput && v.Op != ir.OpParam {
			continue
		}
		t := tensor.New(v.Type)
		for i := 0; i < t.Len(); i++ {
			h := uint64(i)*2654435761 + seed*97
			switch v.Name {
			case "x":
				t.F[i] = tensor.RoundFloat(ir.F16, float64(int(h%2001)-1000)/997)
			case "q":
				t.I[i] = int64(h % 256)
			case "z":
				t.I[i] = int64(h % 16)
			case "s":
				if i%16 == 3 {
					t.F[i] = special[(i/16)%len(special)]
				} else {
					t.F[i] = tensor.RoundFloat(ir.F16, math.Ldexp(float64(h%2048+1), -int(h%20)-8))
				}
			}
		}
		if v.Op == ir.OpInput {
			in[v.Name] = t
		} else {
			params[v.Name] = t
		}
	}
	return in, params
}
