package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// exampleBatch is each example's own batch, the number its model.go passes to b.Batch.
var exampleBatch = map[string]int{
	"linreg": 8, "mlp": 16, "cnn": 64, "rnn": 1, "lstm": 4, "transformer": 2, "gpt": 1,
	"resnet": 4, "mobilenet": 4, "unet": 2, "swish": 64, "fashion_cnn": 64, "fashion_mlp": 64,
}

// Every example traces at a batch chosen when loading: the graph is the graph at its own batch
// with every batch-carrying dim scaled, and the interpreter's graph is the compiled model's.
func TestExamplesAtBatch(t *testing.T) {
	for _, ex := range examples.All() {
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

func TestBatchOtherFormats(t *testing.T) {
	dir := t.TempDir()
	gir := filepath.Join(dir, "m.gir")
	if err := os.WriteFile(gir, []byte("graph g {\n  input %x : f32[2]\n  output y = %x\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(gir, Options{}); err != nil {
		t.Fatal(err)
	}
	onnx := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(onnx, []byte{}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{gir, "m.gir: a .gir graph marks no batch dim"},
		{onnx, "m.onnx: an .onnx model's batch is set with its input shapes: --shape"},
	} {
		if _, err := File(tc.file, Options{Batch: 2}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}
