package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// int8Linear is the model, y = x·DequantizeLinear(W, scale[, zero]) + b with x
// f32[1,K] and a per-column scale: MatMul over W int8[K,N] (scale axis 1), or Gemm with transB
// over W[N,K] (scale axis 0). alsoOutput makes the dequantized weight a graph output too.
func int8Linear(k, n int, gemm, zero, alsoOutput bool, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	ws := []int{k, n}
	ax := int64(1)
	if gemm {
		ws, ax = []int{n, k}, 0
	}
	w := tensor.New(ir.T(ir.I8, ws...))
	for i := range w.I {
		w.I[i] = int64(r.IntN(256) - 128)
	}
	s, b := make([]float64, n), make([]float64, n)
	for i := range s {
		s[i], b[i] = 0.001+r.Float64()/100, r.Float64()-0.5
	}
	inits := []*onnxpb.TensorProto{encodeTensor("W", w), floats("scale", []int{n}, s...), floats("b", []int{n}, b...)}
	dqIn := []string{"W", "scale"}
	if zero {
		z := tensor.New(ir.T(ir.I8, n))
		for i := range z.I {
			z.I[i] = int64(r.IntN(21) - 10)
		}
		inits = append(inits, encodeTensor("zp", z))
		dqIn = append(dqIn, "zp")
	}
	nodes := []*onnxpb.NodeProto{nodeP("DequantizeLinear", "dq", dqIn, []string{"Wf"}, attrI("axis", ax))}
	if gemm {
		nodes = append(nodes, nodeP("Gemm", "fc", []string{"x", "Wf", "b"}, []string{"y"}, attrI("transB", 1)))
	} else {
		nodes = append(nodes, nodeP("MatMul", "mm", []string{"x", "Wf"}, []string{"xw"}, nil...),
			nodeP("Add", "add", []string{"xw", "b"}, []string{"y"}))
	}
	outs := []*onnxpb.ValueInfoProto{valueInfo("y", onnxFloat, 1, n)}
	if alsoOutput {
		outs = append(outs, valueInfo("Wf", onnxFloat, ws[0], ws[1]))
	}
	return model(13, &onnxpb.GraphProto{Name: ptr("int8"), Input: []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, 1, k)},
		Initializer: inits, Node: nodes, Output: outs})
}

// A DequantizeLinear of an int8 initializer feeding MatMul or Gemm becomes the dequantize op,
// and the model computes what the decomposition computes; where the dequantized weight is read
// elsewhere too (here: an output) the decomposition stays.
func TestDequantizeLinearWeight(t *testing.T) {
	const k, n = 96, 40
	for _, c := range []struct{ gemm, zero, alsoOutput bool }{
		{false, false, false}, {true, false, false}, {false, true, false}, {true, true, false}, {false, false, true},
	} {
		t.Run(fmt.Sprintf("gemm%v_zero%v_output%v", c.gemm, c.zero, c.alsoOutput), func(t *testing.T) {
			m, err := Import("q.onnx", int8Linear(k, n, c.gemm, c.zero, c.alsoOutput, 7), "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph.String()
			if has := strings.Contains(g, "dequantize("); has == c.alsoOutput {
				t.Fatalf("dequantize op present: %v, want %v:\n%s", has, !c.alsoOutput, g)
			}
			params, err := m.Weights.Map()
			if err != nil {
				t.Fatal(err)
			}
			x := tensor.New(ir.T(ir.F32, 1, k))
			for i := range x.F {
				x.F[i] = float64(float32(float64(i%7) - 3.25))
			}
			out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x}, params)
			if err != nil {
				t.Fatal(err)
			}
			// the decomposition's result: (W − zero)·scale in f32, then the f32 product
			w, s := params["W"], params["scale"]
			for j := range n {
				sum := 0.0
				for i := range k {
					at := i*n + j
					if c.gemm {
						at = j*k + i
					}
					z := 0.0
					if c.zero {
						z = float64(params["zp"].I[j])
					}
					sum += x.F[i] * float64(float32((float64(w.I[at])-z)*s.F[j]))
				}
				want := float64(float32(float64(float32(sum)) + params["b"].F[j]))
				if got := out["y"].F[j]; math.Abs(got-want) > 1e-6*math.Abs(want) {
					t.Errorf("y[%d] = %v, want %v", j, got, want)
				}
			}
		})
	}
}

// The model at full size: x f32[1,4096]·DequantizeLinear(W int8[4096,4096]) + b reads
// at most 1.2× its 16.8 MB of int8 weights per run, and no bind-time kernel writes an f32 copy.
func TestDequantizeLinearBytes(t *testing.T) {
	const k, n = 4096, 4096
	for _, gemm := range []bool{false, true} {
		m, err := Import("q.onnx", int8Linear(k, n, gemm, false, false, 1), "", Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := passes.Run(m.Graph, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := r.Stats
		if st.BindKernels != 0 || float64(st.DRAMBytes) > 1.2*k*n {
			t.Errorf("gemm %v: %d DRAM bytes per run (%.2f× the int8 weight), %d bind-time kernels; want ≤ 1.2× and none",
				gemm, st.DRAMBytes, float64(st.DRAMBytes)/(k*n), st.BindKernels)
		}
	}
}
