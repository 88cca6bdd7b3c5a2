package onnx

import (
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// fakeQuantLinear is y = x·DQ(Q(W))ᵀ (Gemm, transB) as torch exports a fake-quantized Linear,
// W f32[n,k] an initializer whose values include exact ties (±0.5, ±2.5 steps) and values past
// the integer range; per axis, the last channel's scale is 0. alsoOutput makes Q(W) a graph output, which keeps the decomposition.
func fakeQuantLinear(k, n int, d ir.DType, perAxis, alsoOutput bool) []byte {
	w := make([]float64, n*k)
	for i := range w {
		w[i] = float64(i%23-11) * 0.25 // steps of 0.5 at scale 0.5: ties
	}
	w[0], w[1] = 1000, -1000 // saturate
	scale := []float64{0.5}
	zp := tensor.New(ir.T(d, 1))
	zshape := []int{1}
	if perAxis {
		scale = make([]float64, n)
		zp = tensor.New(ir.T(d, n))
		zshape = []int{n}
		for i := range scale {
			scale[i] = 0.5 + 0.125*float64(i%3)
		}
		scale[n-1] = 0 // ±inf steps, and NaN for the zero weights

	}
	for i := range zp.I {
		zp.I[i] = 3
		if d == ir.U8 {
			zp.I[i] = 128 + int64(i%5)
		}
	}
	zp.Type.Shape = zshape
	attrs := []*onnxpb.AttributeProto{attrI("axis", 0)}
	nodes := []*onnxpb.NodeProto{
		nodeP("QuantizeLinear", "q", []string{"W", "s", "zp"}, []string{"Wq"}, attrs...),
		nodeP("DequantizeLinear", "dq", []string{"Wq", "s", "zp"}, []string{"Wf"}, attrs...),
		nodeP("Gemm", "fc", []string{"x", "Wf"}, []string{"y"}, attrI("transB", 1)),
	}
	outs := []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 2, n)}
	if alsoOutput {
		outs = append(outs, valueInfo("Wq", int32(onnxDType(d)), n, k))
	}
	return model(13, &onnxpb.GraphProto{Name: ptr("fq"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 2, k)},
		Initializer: []*onnxpb.TensorProto{floats("W", []int{n, k}, w...), floats("s", []int{len(scale)}, scale...), encodeTensor("zp", zp)},
		Node:        nodes, Output: outs})
}

// A QuantizeLinear of a float initializer read only by DequantizeLinear is computed at import
// (an int8 or uint8 parameter, no f32 weight left, the dequantize op for the product's weight),
// and the integers and the model's outputs are the decomposition's, bit for bit, ties,
// saturation and a zero scale included.
func TestQuantizedWeightFolded(t *testing.T) {
	const k, n = 24, 6
	x := tensor.New(ir.T(ir.F32, 2, k))
	for i := range x.F {
		x.F[i] = float64(float32(math.Sin(float64(i))))
	}
	for _, d := range []ir.DType{ir.I8, ir.U8} {
		for _, perAxis := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_perAxis%v", d, perAxis), func(t *testing.T) {
				run := func(alsoOutput bool) (*Model, map[string]*tensor.Tensor) {
					m, err := Import("fq.onnx", fakeQuantLinear(k, n, d, perAxis, alsoOutput), "", Options{})
					if err != nil {
						t.Fatal(err)
					}
					params, err := m.Weights.Map()
					if err != nil {
						t.Fatal(err)
					}
					out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x}, params)
					if err != nil {
						t.Fatal(err)
					}
					return m, out
				}
				folded, gotOut := run(false)
				_, wantOut := run(true)
				got, want := gotOut["y"], wantOut["y"]
				// the folded integers are the decomposition's, where a zero scale makes them
				// invisible in y too
				q, err := folded.Weights.Tensor("W_quantized")
				if err != nil || q == nil {
					t.Fatalf("no W_quantized parameter (%v); weights %v", err, folded.Weights.Names())
				}
				for i, v := range wantOut["Wq"].I {
					if q.I[i] != v {
						t.Fatalf("W_quantized[%d] = %d, the decomposition's %d", i, q.I[i], v)
					}
				}
				for _, name := range folded.Weights.Names() {
					if ty, _ := folded.Weights.Type(name); len(ty.Shape) == 2 && ty.DType != d {
						t.Errorf("weight %s is %s, want %s", name, ty, d)
					}
				}
				if _, ok := folded.Weights.Type("W"); ok {
					t.Errorf("the f32 weight W is still a parameter")
				}
				for i := range want.F {
					if math.Float64bits(got.F[i]) != math.Float64bits(want.F[i]) {
						t.Fatalf("y[%d] = %v, the decomposition's %v", i, got.F[i], want.F[i])
					}
				}
			})
		}
	}
}
