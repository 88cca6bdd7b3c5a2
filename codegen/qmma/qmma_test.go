package qmma

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// Fits takes exactly the products the quantized tensor-core GEMM computes: 16-bit operands,
// more rows than the GEMV template's, a weight [N,K] dequantized along K (of the operands'
// dtype, or f32 cast to it) with groups of a multiple of 16 or one per row, operands not views.
func TestFits(t *testing.T) {
	type spec struct {
		dt, sdt          ir.DType // operands, scales
		cast             bool     // an f32 dequantize cast to dt
		m, n, k          int
		bits, group, axi int
		viewQ            bool // q read through a transpose
		want             bool
	}
	cases := map[string]spec{
		"int4 f16 g128":             {ir.F16, ir.F16, false, 128, 64, 256, 4, 128, 1, false, true},
		"int8 bf16 per row":         {ir.BF16, ir.BF16, false, 9, 64, 100, 8, 100, 1, false, true},
		"f32 cast to bf16":          {ir.BF16, ir.F32, true, 16, 64, 256, 4, 32, 1, false, true},
		"f32 cast to f16 g48":       {ir.F16, ir.F32, true, 16, 64, 96, 8, 48, 1, false, true},
		"8 rows: the GEMV's":        {ir.F16, ir.F16, false, 8, 64, 256, 4, 128, 1, false, false},
		"f32 operands":              {ir.F32, ir.F32, false, 128, 64, 256, 4, 128, 1, false, false},
		"group 8":                   {ir.F16, ir.F16, false, 128, 64, 256, 4, 8, 1, false, false},
		"axis 0: stored [K,N]":      {ir.F16, ir.F16, false, 128, 64, 256, 8, 256, 0, false, false},
		"q through a view":          {ir.F16, ir.F16, false, 128, 64, 256, 8, 256, 1, true, false},
		"f16 dequantize cast to bf": {ir.BF16, ir.F16, true, 128, 64, 256, 8, 256, 1, false, false},
		"K = 0":                     {ir.F16, ir.F16, false, 128, 64, 0, 8, 16, 1, false, false},
		"N = 0":                     {ir.F16, ir.F16, false, 128, 0, 256, 8, 256, 1, false, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wShape := ir.Shape{c.n, c.k}
			qShape := ir.Shape{c.n, c.k * c.bits / 8}
			sShape := ir.Shape{c.n, c.k / c.group}
			if c.axi == 0 {
				wShape, qShape, sShape = ir.Shape{c.k, c.n}, ir.Shape{c.k * c.bits / 8, c.n}, ir.Shape{c.k / c.group, c.n}
			}
			q := &ir.Value{Op: ir.OpParam, Type: ir.Type{DType: ir.U8, Shape: qShape}}
			if c.viewQ {
				q = &ir.Value{Op: "transpose", Type: q.Type, Args: []*ir.Value{{Op: ir.OpParam, Type: ir.Type{DType: ir.U8, Shape: ir.Shape{qShape[1], qShape[0]}}}}, Attrs: ir.Attrs{"perm": []int{1, 0}}}
			}
			s := &ir.Value{Op: ir.OpParam, Type: ir.Type{DType: c.sdt, Shape: sShape}}
			w := &ir.Value{Op: "dequantize", Type: ir.Type{DType: c.sdt, Shape: wShape}, Args: []*ir.Value{q, s},
				Attrs: ir.Attrs{"bits": c.bits, "group": c.group, "axis": c.axi}}
			dq := w
			if c.cast {
				w = &ir.Value{Op: "cast", Type: ir.Type{DType: c.dt, Shape: wShape}, Args: []*ir.Value{w}, Attrs: ir.Attrs{"to": c.dt}}
			}
			x := &ir.Value{Op: ir.OpInput, Type: ir.Type{DType: c.dt, Shape: ir.Shape{c.m, c.k}}}
			dot := &ir.Value{Op: "dot_general", Type: ir.Type{DType: c.dt, Shape: ir.Shape{c.m, c.n}}, Args: []*ir.Value{x, w},
				Attrs: ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{c.axi}}}
			got, ok := Fits(dot)
			if ok != c.want || ok && got != dq {
				t.Fatalf("Fits = %v, %v; want %v", got != nil, ok, c.want)
			}
		})
	}
}
