package load

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// An ONNX model's weights come with its graph; loads of several models at once do not share
// them.
func TestModelFileWeights(t *testing.T) {
	path := filepath.Join("..", "frontend", "onnx", "suite", "testdata", "exported", "mlp_opset17.onnx")
	models := make([]*Model, 4)
	var wg sync.WaitGroup
	for i := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opt := Options{}
			opt.ONNX.Shapes = map[string][]int{"x": {i + 1, 64}}
			m, err := ModelFile(path, opt)
			if err != nil {
				t.Error(err)
				return
			}
			models[i] = m
		}()
	}
	wg.Wait()
	for i, m := range models {
		if m == nil {
			t.FailNow()
		}
		if got := m.Graph.Inputs()[0].Type.Shape[0]; got != i+1 {
			t.Errorf("model %d: batch %d", i, got)
		}
		params := m.Graph.Params()
		if len(params) == 0 || m.Weights.Len() != len(params) {
			t.Fatalf("model %d: %d weights for %d parameters", i, m.Weights.Len(), len(params))
		}
		for _, p := range params {
			w, err := m.Weights.Tensor(p.Name)
			if err != nil || w == nil || !w.Type.Equal(p.Type) {
				t.Fatalf("model %d: parameter %s %s: weight %v, %v", i, p.Name, p.Type, w, err)
			}
		}
	}

	gir := filepath.Join(t.TempDir(), "m.gir")
	if err := os.WriteFile(gir, []byte("graph m {\n  param %w : f32[2]\n  output y = %w\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ModelFile(gir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Weights != nil {
		t.Fatalf("a .gir model has weights %v", m.Weights.Names())
	}
}
