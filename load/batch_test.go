package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
)

// exampleBatch is each example's own batch, the number its model.go passes to b.Batch.
var exampleBatch = map[string]int{
	"linreg": 8, "mlp": 16, "cnn": 64, "rnn": 1, "lstm": 4, "transformer": 2, "gpt": 1,
	"resnet": 4, "mobilenet": 4, "unet": 2, "swish": 64, "fashion_cnn": 64, "fashion_mlp": 64, "fashion_bncnn": 32,
}

// Every example traces at a batch chosen when loading: the graph is the graph at its own batch
// with every batch-carrying dim scaled, and the interpreter's graph is the compiled model's.
func TestExamplesAtBatch(t *testing.T) {
	for _, ex := range append(append([]examples.Example(nil), examples.Tutorials...), examples.Fashion...) {
		// Not examples.LanguageModels: their index tensors (positions, the cache's slots)
		// broadcast over the batch, so the graph at batch 1 has fewer broadcast ops; package lm
		// builds their programs at the batch an engine decodes.
		own, ok := exampleBatch[ex.Name]
		if !ok {
			t.Errorf("%s: no default batch in exampleBatch", ex.Name)
			continue
		}
		path := filepath.Join("..", ex.Dir, "model.go")
		dm, got, err := ModelFileBatch(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		def := dm.Graph
		if got != own {
			t.Errorf("%s: traced at batch %d by default, want %d", ex.Name, got, own)
		}
		for _, batch := range []int{1, 3, 64} {
			m, got, err := ModelFileBatch(path, Options{Batch: batch})
			if err != nil {
				t.Errorf("%s at batch %d: %v", ex.Name, batch, err)
				continue
			}
			g := m.Graph
			if got != batch {
				t.Errorf("%s: traced at batch %d, want %d", ex.Name, got, batch)
			}
			if err := followsBatch(def, g, own, batch); err != nil {
				t.Errorf("%s at batch %d does not follow its own graph: %v", ex.Name, batch, err)
			}
			in := g.Inputs()[0]
			if n := in.Type.Shape[0]; ex.Name != "lstm" && n != batch {
				t.Errorf("%s at batch %d: input %s is %s", ex.Name, batch, in.Name, in.Type)
			}
			compiled, err := frontend.Build(g.Name, ex.Model, frontend.WithBatch(batch))
			if err != nil {
				t.Fatal(err)
			}
			if a, b := withoutPos(g), withoutPos(compiled); a != b {
				t.Errorf("%s at batch %d: the interpreter's graph differs from the compiled model's:\n%s", ex.Name, batch, cmp.Diff(a, b))
			}
		}
		// The file's own batch asked for explicitly gives today's graph.
		g, err := File(path, Options{Batch: own})
		if err != nil || g.String() != def.String() {
			t.Errorf("%s at its own batch %d: %v; graph differs: %v", ex.Name, own, err, err == nil && g.String() != def.String())
		}
	}
}

// withoutPos prints g without source positions, which differ between the two routes (the
// interpreter's are relative to the model file's path).
func withoutPos(g *ir.Graph) string {
	var b strings.Builder
	for _, line := range strings.Split(g.String(), "\n") {
		if i := strings.Index(line, ` loc("`); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

const batchModel = `package m

import "github.com/gcomp/gcomp/frontend"

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, b.Batch(64), 784)
	BODY
}
`

func TestBatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		batch      int
		want       string // the error, or "" for none
	}{
		{"follows", `b.Output("y", x.View(-1, 28, 28).Sum(1))`, 3, ""},
		{"merged dims follow", `b.Output("y", x.View(-1, 16).Relu())`, 5, ""},
		{"own batch in a constant", `b.Output("y", x.Add(b.Zeros(frontend.F32, b.Batch(64), 784)))`, 3, ""},
		{"literal reshape", `b.Output("y", x.Reshape(64, 784).Relu())`, 3,
			"model.go:7: reshape: shape [64 784] is invalid for x f32[3,784] (2352 elements) (at batch 3, while the model's own batch builds: this line fixes the batch)"},
		{"literal reshape, larger batch", `b.Output("y", x.Reshape(64, -1).Relu())`, 128,
			"model.go:7: reshape: shape [64 -1] is invalid for x f32[129,784] (101136 elements) (at batch 129, traced besides 128 to check that the graph follows the batch: this line fixes the batch)"},
		{"constant of the file's batch", `b.Output("y", x.Add(b.Zeros(frontend.F32, 64, 784)))`, 1,
			"model.go:7: add: shapes cannot be broadcast together: x is f32[2,784], rhs is f32[64,784] (at batch 2, traced besides 1"},
		{"not a multiple", `b.Output("y", b.Zeros(frontend.F32, b.Batch(64)+1, 4))
	b.Output("x", x)`, 3, "model.go:7: constant f32[4,4]: dim 0 is 4 at batch 3 and 5 at batch 4, not a fixed multiple of the batch: this line fixes the batch"},
		{"parameter", `w := b.Param("w", frontend.T(frontend.F32, b.Batch(64)), frontend.Ones())
	b.Output("y", x.Sum(1).Add(w))`, 3, "model.go:7: parameter w: its shape depends on the batch: f32[3] at batch 3, f32[4] at batch 4"},
		{"defaults differ", `b.Output("y", b.Zeros(frontend.F32, b.Batch(32)).Add(x.Sum(1)))`, 3,
			"model.go:7: batch: the default batch is 32 here but 64 at model.go:6"},
		{"structure", `if x.Shape()[0] > 3 {
		x = x.Relu()
	}
	b.Output("y", x)`, 3, "the graph's structure depends on the batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(batchModel, "BODY", tc.body, 1)
			_, err := Source("model.go", []byte(src), Options{Batch: tc.batch})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no error, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestBatchNotDeclared(t *testing.T) {
	src := strings.Replace(batchModel, "b.Batch(64)", "64", 1)
	src = strings.Replace(src, "BODY", `b.Output("y", x)`, 1)
	if _, err := Source("model.go", []byte(src), Options{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, batch, err := ModelFileBatch(path, Options{}); err != nil || batch != 0 {
		t.Errorf("a model without b.Batch: batch %d, %v; want 0", batch, err)
	}
	_, err := Source("model.go", []byte(src), Options{Batch: 3})
	if err == nil || !strings.Contains(err.Error(), "model.go: batch 3 asked for, but the model never declares its batch") {
		t.Fatalf("err = %v", err)
	}
}

func TestBatchGIR(t *testing.T) {
	dir := t.TempDir()
	gir := filepath.Join(dir, "m.gir")
	if err := os.WriteFile(gir, []byte("graph g {\n  input %x : f32[2]\n  output y = %x\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(gir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := File(gir, Options{Batch: 2}); err == nil || !strings.Contains(err.Error(), "m.gir: a .gir graph marks no batch dim") {
		t.Errorf("err = %v", err)
	}
	// A .gir with dims is not "fixed when it is written": the message says what it holds.
	sym := filepath.Join(dir, "s.gir")
	if err := os.WriteFile(sym, []byte("graph s {\n  dims { batch in [1,8] }\n  input %x : f32[batch]\n  output y = %x\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "s.gir: a .gir graph marks no batch dim (its shapes, and the ranges of any dims { } it declares, are written in it)"
	if _, err := File(sym, Options{Batch: 2}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// An .onnx model's symbolic first dims take the batch; a node that fixes it is an error.
func TestBatchONNX(t *testing.T) {
	mlp := filepath.Join("..", "frontend", "onnx", "suite", "testdata", "exported", "mlp_opset17.onnx")
	m, batch, err := ModelFileBatch(mlp, Options{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	var shaped Options
	shaped.ONNX.Shapes = map[string][]int{"x": {3, 64}}
	want, err := File(mlp, shaped)
	if err != nil {
		t.Fatal(err)
	}
	if batch != 3 || m.Graph.String() != want.String() {
		t.Errorf("--batch 3 (batch %d) is not --shape x=3x64:\n%s\n%s", batch, m.Graph, want)
	}
	shaped.Batch = 3
	if _, err := File(mlp, shaped); err == nil || !strings.Contains(err.Error(), "--batch 3: no input without --shape has a symbolic first dimension") {
		t.Errorf("--batch with every input shaped: %v", err)
	}

	// Reshape(x, [2, 4]) of x f32[batch, 4]: right at batch 2 only.
	str := func(s string) *string { return &s }
	elem := func(e int32) *int32 { return &e }
	dim := func(d any) *onnxpb.TensorShapeProto_Dimension {
		if s, ok := d.(string); ok {
			return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: s}}
		}
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d.(int))}}
	}
	info := func(name string, dims ...any) *onnxpb.ValueInfoProto {
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, dim(d))
		}
		return &onnxpb.ValueInfoProto{Name: str(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: elem(1), Shape: shape}}}}
	}
	graph := &onnxpb.GraphProto{
		Name:        str("g"),
		Input:       []*onnxpb.ValueInfoProto{info("x", "batch", 4)},
		Output:      []*onnxpb.ValueInfoProto{info("y", 2, 4)},
		Initializer: []*onnxpb.TensorProto{{Name: str("shape"), Dims: []int64{2}, DataType: elem(7), Int64Data: []int64{2, 4}}},
		Node:        []*onnxpb.NodeProto{{OpType: str("Reshape"), Name: str("fixed"), Input: []string{"x", "shape"}, Output: []string{"y"}}},
	}
	version, opset := int64(8), int64(17)
	data, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: &version, Graph: graph,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: str(""), Version: &opset}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fixed.onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = File(path, Options{Batch: 2})
	if err == nil || !strings.Contains(err.Error(), "fixed.onnx") || !strings.Contains(err.Error(), "Reshape") ||
		!strings.Contains(err.Error(), "(at batch 3, imported besides 2 to check that the graph follows the batch)") {
		t.Errorf("a Reshape to a constant batch: %v", err)
	}
}
