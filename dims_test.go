package gcomp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"google.golang.org/protobuf/proto"
)

// gated is y = relu(x·Wᵀ + b)·m over a batch the function declares with b.Batch(2): two inputs
// sharing the batch, so a run's inputs may disagree on it.
func gated(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(2), 3)
	m := b.Input("m", frontend.F32, b.Batch(2), 2)
	b.Output("y", nn.NewLinear(b, "fc", 3, 2).Forward(x).Relu().Mul(m))
}

// gatedInputs are n rows of seeded values for gated.
func gatedInputs(n int) map[string]*gcomp.Tensor {
	x, m := make([]float32, 3*n), make([]float32, 2*n)
	for i := range x {
		x[i] = float32((i*7)%11) - 4.5
	}
	for i := range m {
		m[i] = float32(i%3) + 0.5
	}
	return map[string]*gcomp.Tensor{"x": gcomp.Float32(x, n, 3), "m": gcomp.Float32(m, n, 2)}
}

// A model built with Options.MaxBatch describes its dims and symbolic axes, and one build runs
// every batch in range on every device, giving what the static build at that batch gives on the
// reference interpreter (the specification); with Specialize, the variant's sizes too.
func TestMaxBatchRuns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       gcomp.Options
		variants   int
		devices    []string
		sizes      []int
		wantInputs string
	}{
		{"bound 5", gcomp.Options{MaxBatch: 5}, 0, []string{"ref", "sim"}, []int{1, 2, 3, 5},
			"[{x f32 [5 3] dims [batch 3] lo [1 3]} {m f32 [5 2] dims [batch 2] lo [1 2]}]"},
		{"specialized", gcomp.Options{MaxBatch: 8, Specialize: []string{"batch=2"}}, 1, []string{"sim"}, []int{1, 2, 3, 8},
			"[{x f32 [8 3] dims [batch 3] lo [1 3]} {m f32 [8 2] dims [batch 2] lo [1 2]}]"},
		{"nvvm", gcomp.Options{MaxBatch: 4, Backend: "nvvm"}, 0, []string{"sim"}, []int{1, 4},
			"[{x f32 [4 3] dims [batch 3] lo [1 3]} {m f32 [4 2] dims [batch 2] lo [1 2]}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Backend == "nvvm" {
				libnvvm.Require(t) // skips loudly without libNVVM, fails under CI's GCOMP_REQUIRE_PTXAS
			}
			m, err := gcomp.Compile("gated", gated, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(m.Inputs()); got != tc.wantInputs {
				t.Errorf("inputs %s, want %s", got, tc.wantInputs)
			}
			if got, want := fmt.Sprint(m.Dims()), fmt.Sprintf("[{batch 1 %d}]", tc.opts.MaxBatch); got != want {
				t.Errorf("dims %s, want %s", got, want)
			}
			if got := len(m.Artifact().Plan.Variants); got != tc.variants {
				t.Errorf("%d variants, want %d", got, tc.variants)
			}
			for _, dev := range tc.devices {
				s := open(t, m, gcomp.SessionOptions{Device: dev, Pool: 1, Weights: tinyWeights()})
				for _, n := range tc.sizes {
					got, err := s.Run(context.Background(), gatedInputs(n))
					if err != nil {
						t.Fatalf("%s at batch %d: %v", dev, n, err)
					}
					want := staticRun(t, n)
					if !slices.Equal(got["y"].Shape(), []int{n, 2}) {
						t.Fatalf("%s at batch %d: y is %v, want [%d 2]", dev, n, got["y"].Shape(), n)
					}
					g, w := values(t, got, "y"), values(t, want, "y")
					for i := range w {
						if math.Abs(float64(g[i]-w[i])) > 1e-5*max(1, math.Abs(float64(w[i]))) {
							t.Fatalf("%s at batch %d: y[%d] = %v, the static build's %v", dev, n, i, g[i], w[i])
						}
					}
				}
			}
		})
	}
}

// staticRun runs gated built at batch n on the reference interpreter.
func staticRun(t *testing.T, n int) map[string]*gcomp.Tensor {
	t.Helper()
	m, err := gcomp.Compile("gated", gated, gcomp.Options{Batch: n})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, m, gcomp.SessionOptions{Device: "ref", Pool: 1, Weights: tinyWeights()})
	out, err := s.Run(context.Background(), gatedInputs(n))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A run whose sizes do not bind the model's dims is one ErrShapeMismatch naming the input, the
// dim and its range, on every device, before anything runs; a wrong dtype or rank is a
// *ShapeError as for a static model.
func TestMaxBatchRunErrors(t *testing.T) {
	m, err := gcomp.Compile("gated", gated, gcomp.Options{MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	in := func(xRows, mRows int) map[string]*gcomp.Tensor {
		return map[string]*gcomp.Tensor{"x": gatedInputs(xRows)["x"], "m": gatedInputs(mRows)["m"]}
	}
	for _, dev := range []string{"ref", "sim"} {
		s := open(t, m, gcomp.SessionOptions{Device: dev, Pool: 1, Weights: tinyWeights()})
		for _, tc := range []struct {
			name   string
			inputs map[string]*gcomp.Tensor
			msg    string
			shape  bool // a *ShapeError
		}{
			{"above the range", in(5, 5), "gcomp: input x: dim 0 (batch) is 5, outside batch's range [1,4]", false},
			{"zero rows", in(0, 0), "gcomp: input x: dim 0 (batch) is 0, outside batch's range [1,4]", false},
			{"inputs disagree", in(2, 3), "gcomp: inputs disagree on batch: input x's dim 0 is 2, input m's dim 0 is 3", false},
			{"static axis", map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 8), 2, 4), "m": gatedInputs(2)["m"]}, "gcomp: input x: dim 1 is 4, want 3", false},
			{"rank", map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 6), 6), "m": gatedInputs(2)["m"]}, "input x is f32[6], the model wants f32[batch,3]", true},
			{"dtype", map[string]*gcomp.Tensor{"x": gcomp.Float64(make([]float64, 6), 2, 3), "m": gatedInputs(2)["m"]}, "input x is f64[2,3], the model wants f32[batch,3]", true},
			{"short slice", map[string]*gcomp.Tensor{"x": gcomp.Float32(make([]float32, 5), 2, 3), "m": gatedInputs(2)["m"]}, "input x: its slice holds 5 elements, its shape [2 3] needs 6", true},
		} {
			_, err := s.Run(context.Background(), tc.inputs)
			var se *gcomp.ShapeError
			if !errors.Is(err, gcomp.ErrShapeMismatch) || err.Error() != tc.msg || errors.As(err, &se) != tc.shape {
				t.Errorf("%s, %s: err = %v, want %q (ErrShapeMismatch, *ShapeError %v)", dev, tc.name, err, tc.msg, tc.shape)
			}
		}
		if _, err := s.Run(context.Background(), gatedInputs(3)); err != nil {
			t.Errorf("%s: a run after the refused ones: %v", dev, err)
		}
	}
}

// Options that build over ranges refuse what they cannot mean, each with one error naming the
// option, before compiling.
func TestDimsOptionsBad(t *testing.T) {
	dir := t.TempDir()
	gir := filepath.Join(dir, "s.gir")
	if err := os.WriteFile(gir, []byte("graph s {\n  dims { n in [1,4] }\n  input %x : f32[n,2]\n  %0 = neg(%x) : f32[n,2]\n  output y = %0\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	graph := ir.NewGraph("g")
	graph.SetOutput("y", graph.Input("x", ir.T(ir.F32, 4), nil))
	for _, tc := range []struct {
		name    string
		compile func() (*gcomp.Model, error)
		want    string
	}{
		{"max batch with batch", func() (*gcomp.Model, error) {
			return gcomp.Compile("gated", gated, gcomp.Options{Batch: 2, MaxBatch: 4})
		},
			"batch 2 and max batch 4 both asked for"},
		{"negative max batch", func() (*gcomp.Model, error) { return gcomp.Compile("gated", gated, gcomp.Options{MaxBatch: -1}) },
			"max batch: must be positive, have -1"},
		{"max batch of a fixed batch", func() (*gcomp.Model, error) { return gcomp.Compile("tiny", tiny, gcomp.Options{MaxBatch: 4}) },
			"never declares its batch"},
		{"max shapes of a Go model", func() (*gcomp.Model, error) {
			return gcomp.Compile("gated", gated, gcomp.Options{MaxShapes: map[string][]int{"x": {4, 3}}})
		}, "MaxShapes bounds an .onnx model's axes"},
		{"max batch of a graph", func() (*gcomp.Model, error) { return gcomp.CompileGraph(graph, gcomp.Options{MaxBatch: 4}) },
			"a graph declares its dims itself"},
		{"max batch of a .gir", func() (*gcomp.Model, error) { return gcomp.CompileFile(gir, gcomp.Options{MaxBatch: 4}) },
			"a .gir model declares its dims itself"},
		{"malformed specialize", func() (*gcomp.Model, error) {
			return gcomp.Compile("gated", gated, gcomp.Options{MaxBatch: 4, Specialize: []string{"batch"}})
		}, `gcomp: specialize "batch": want NAME=BOUND`},
		{"specialize an unknown dim", func() (*gcomp.Model, error) {
			return gcomp.CompileFile(gir, gcomp.Options{Specialize: []string{"seq=2"}})
		},
			`specialize seq: graph s has no dim "seq" (its dims: n)`},
		{"specialize at the bound", func() (*gcomp.Model, error) {
			return gcomp.CompileFile(gir, gcomp.Options{Specialize: []string{"n=4"}})
		},
			"specialize n=4: the bound must lie in n's range [1,4] and below its upper end 4"},
		{"specialize a static model", func() (*gcomp.Model, error) {
			return gcomp.Compile("tiny", tiny, gcomp.Options{Specialize: []string{"auto"}})
		},
			"graph tiny has no dims to specialize"},
	} {
		m, err := tc.compile()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: model %v, err = %v; want one line containing %q", tc.name, m != nil, err, tc.want)
		}
	}
}

// Options.MaxShapes bounds an .onnx model's dynamic axes as --max-shape does: one build runs the
// exported attention block at several sequence lengths, matching PyTorch.
func TestMaxShapesONNX(t *testing.T) {
	const dir = "frontend/onnx/suite/testdata/dynamic/"
	m, err := gcomp.CompileFile(dir+"seq_attn_opset13.onnx", gcomp.Options{MaxShapes: map[string][]int{"x": {2, 8, 16}}})
	if err != nil {
		t.Fatal(err)
	}
	in := m.Inputs()
	if len(in) != 1 || len(in[0].Dims) != 3 || in[0].Dims[0] != "2" || in[0].Dims[2] != "16" || !slices.Equal(in[0].Lo, []int{2, 1, 16}) || !slices.Equal(in[0].Shape, []int{2, 8, 16}) {
		t.Errorf("inputs %v: want x's axis 1 over a dim in [1,8]", in)
	}
	if d := m.Dims(); len(d) != 1 || d[0].Name != in[0].Dims[1] || d[0].Lo != 1 || d[0].Hi != 8 {
		t.Errorf("dims %v, want one in [1,8] named as x's axis 1 (%v)", d, in[0].Dims)
	}
	s := open(t, m, gcomp.SessionOptions{Device: "sim", Pool: 1, NoSimChecks: true})
	long := gcomp.Float32(make([]float32, 2*9*16), 2, 9, 16)
	if _, err := s.Run(context.Background(), map[string]*gcomp.Tensor{in[0].Name: long}); !errors.Is(err, gcomp.ErrShapeMismatch) ||
		err.Error() != fmt.Sprintf("gcomp: input x: dim 1 (%s) is 9, outside %[1]s's range [1,8]", in[0].Dims[1]) {
		t.Errorf("a sequence of 9: %v", err)
	}
	for _, n := range []int{1, 7} {
		sub := fmt.Sprintf("%sseq_attn_size%d/", dir, n)
		x, err := tensor.ReadNPYFile(sub + "x.npy")
		if err != nil {
			t.Fatal(err)
		}
		want, err := tensor.ReadNPYFile(sub + "y.npy")
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{in[0].Name: gcomp.FromHost(x)})
		if err != nil {
			t.Fatal(err)
		}
		y := out[m.Outputs()[0].Name].Host()
		if !y.Type.Equal(want.Type) {
			t.Fatalf("seq %d: y is %s, PyTorch's %s", n, y.Type, want.Type)
		}
		for i := range want.F {
			if d := math.Abs(y.F[i] - want.F[i]); d > 1e-4 {
				t.Fatalf("seq %d: y[%d] = %v, PyTorch %v", n, i, y.F[i], want.F[i])
			}
		}
	}
}

// A model with dims under an .onnx file's own input names ("onnx::Relu_0", as torch names them)
// runs under them, and a size out of range is reported under them too.
func TestMaxShapesONNXNames(t *testing.T) {
	f32 := ptr(int32(onnxpb.TensorProto_FLOAT))
	info := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: ptr(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: f32, Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
				{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}},
				{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 2}}}}}}}}
	}
	data, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: ptr(int64(8)), OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: ptr(""), Version: ptr(int64(13))}},
		Graph: &onnxpb.GraphProto{Name: ptr("torch_jit"), Input: []*onnxpb.ValueInfoProto{info("onnx::Relu_0")}, Output: []*onnxpb.ValueInfoProto{info("1")},
			Node: []*onnxpb.NodeProto{{OpType: ptr("Relu"), Name: ptr("/Relu"), Input: []string{"onnx::Relu_0"}, Output: []string{"1"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "relu.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := gcomp.CompileFile(path, gcomp.Options{MaxShapes: map[string][]int{"onnx::Relu_0": {4, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Inputs(); fmt.Sprint(in) != "[{onnx::Relu_0 f32 [4 2] dims [batch 2] lo [1 2]}]" {
		t.Fatalf("inputs %v: want onnx::Relu_0 over batch in [1,4]", in)
	}
	for _, dev := range []string{"ref", "sim"} {
		s := open(t, m, gcomp.SessionOptions{Device: dev, Pool: 1})
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"onnx::Relu_0": gcomp.Float32([]float32{-1, 2, 3, -4, 5, 0}, 3, 2)})
		if err != nil {
			t.Fatal(err)
		}
		if y := values(t, out, "1"); !slices.Equal(y, []float32{0, 2, 3, 0, 5, 0}) || !slices.Equal(out["1"].Shape(), []int{3, 2}) {
			t.Errorf("%s: y %v %v", dev, out["1"].Shape(), y)
		}
		five := gcomp.Float32(make([]float32, 10), 5, 2)
		_, err = s.Run(context.Background(), map[string]*gcomp.Tensor{"onnx::Relu_0": five})
		if !errors.Is(err, gcomp.ErrShapeMismatch) || err.Error() != "gcomp: input onnx::Relu_0: dim 0 (batch) is 5, outside batch's range [1,4]" {
			t.Errorf("%s: 5 rows: %v", dev, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
