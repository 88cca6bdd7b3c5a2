package fashion_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/fashion/bncnn"
	"github.com/gcomp/gcomp/examples/fashion/cnn"
	"github.com/gcomp/gcomp/examples/fashion/mlp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// noLoc matches the source positions in printed IR.
var noLoc = regexp.MustCompile(` loc\("[^"]*"\)`)

// Both models load as gcomp loads them (through the interpreter) and as compiled Go, to the same
// graph; the graph is pinned in testdata/NAME.txtar; and they run on the reference interpreter
// on the data package's fixture images (one batch), giving finite logits.
func TestModels(t *testing.T) {
	train, _, err := data.LoadMNIST(filepath.Join("..", "..", "data", "testdata", "mnist"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		model   func(*frontend.Builder)
		batch   int
		nparams int
		params  []string
	}{
		{"mlp", mlp.Model, mlp.Batch, 28*28*256 + 256 + 256*10 + 10,
			[]string{"fc1.weight:f32[256,784]", "fc1.bias:f32[256]", "fc2.weight:f32[10,256]", "fc2.bias:f32[10]"}},
		{"cnn", cnn.Model, cnn.Batch, 16*9 + 16 + 32*16*9 + 32 + 1568*128 + 128 + 128*10 + 10,
			[]string{"conv1.weight:f32[16,1,3,3]", "conv1.bias:f32[16]", "conv2.weight:f32[32,16,3,3]", "conv2.bias:f32[32]",
				"fc1.weight:f32[128,1568]", "fc1.bias:f32[128]", "fc2.weight:f32[10,128]", "fc2.bias:f32[10]"}},
		{"bncnn", bncnn.Model, bncnn.Batch, 16*9 + 4*16 + 1 + 32*16*9 + 4*32 + 1 + 1568*128 + 128 + 128*10 + 10,
			[]string{"conv1.weight:f32[16,1,3,3]", "bn1.weight:f32[16]", "bn1.bias:f32[16]", "bn1.running_mean:f32[16]",
				"bn1.running_var:f32[16]", "bn1.num_batches_tracked:i64[]", "conv2.weight:f32[32,16,3,3]",
				"bn2.weight:f32[32]", "bn2.bias:f32[32]", "bn2.running_mean:f32[32]", "bn2.running_var:f32[32]",
				"bn2.num_batches_tracked:i64[]", "fc1.weight:f32[128,1568]", "fc1.bias:f32[128]", "fc2.weight:f32[10,128]", "fc2.bias:f32[10]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(tc.name, "model.go")
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := load.Source("examples/fashion/"+tc.name+"/model.go", src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := frontend.Build(tc.name, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := noLoc.ReplaceAllString(compiled.String(), ""), noLoc.ReplaceAllString(g.String(), ""); a != b {
				t.Errorf("the compiled and the interpreted model differ:\n%s\n%s", a, b)
			}
			path, comment := golden.Example(filepath.Join("..", ".."), "fashion_"+tc.name)
			golden.CheckSections(t, path, comment, "source", []txtar.File{{Name: "model.gir", Data: []byte(g.String())}})

			var got []string
			n := 0
			params := map[string]*tensor.Tensor{}
			for _, p := range g.Params() {
				got = append(got, p.Name+":"+p.Type.String())
				n += p.Type.Shape.NumElements()
				if params[p.Name], err = tensor.Initialize(p, 0); err != nil {
					t.Fatal(err)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.params) || n != tc.nparams {
				t.Errorf("parameters %v (%d values), want %v (%d)", got, n, tc.params, tc.nparams)
			}
			in := g.Inputs()
			if len(in) != 1 || in[0].Name != "x" || in[0].Type.String() != fmt.Sprintf("f32[%d,1,28,28]", tc.batch) {
				t.Fatalf("inputs %v, want x:f32[%d,1,28,28]", in, tc.batch)
			}
			loader := &data.Loader{Data: train, Batch: tc.batch, DropLast: true}
			if loader.Len() != 64/tc.batch {
				t.Fatalf("%d batches of %d from the fixture's 64 images, want %d", loader.Len(), tc.batch, 64/tc.batch)
			}
			for b, err := range loader.Epoch(0) {
				if err != nil {
					t.Fatal(err)
				}
				outs, err := ref.Run(g, map[string]*tensor.Tensor{"x": b.X}, params)
				if err != nil {
					t.Fatal(err)
				}
				logits := outs["logits"]
				if logits == nil || logits.Type.String() != fmt.Sprintf("f32[%d,10]", tc.batch) {
					t.Fatalf("outputs %v, want logits f32[%d,10]", outs, tc.batch)
				}
				for i, v := range logits.F {
					if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 10 {
						t.Fatalf("logit %d = %v", i, v)
					}
				}
			}
		})
	}
}
