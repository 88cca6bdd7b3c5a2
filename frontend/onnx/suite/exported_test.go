package suite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestExported imports models PyTorch exported (scripts/export_onnx.py: the example models with
// random weights, a symbolic batch) and checks the reference interpreter's outputs against
// PyTorch's for the same inputs, within the f32 tolerance rule of internal/tolerance.
func TestExported(t *testing.T) {
	files, _ := filepath.Glob("testdata/exported/*.onnx")
	if len(files) == 0 {
		t.Fatal("no exported models in testdata/exported")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			name := strings.Split(filepath.Base(f), "_opset")[0]
			inputs := map[string]*tensor.Tensor{}
			shapes := map[string][]int{}
			ins, _ := filepath.Glob(filepath.Join("testdata/exported", name+"_inputs", "*.npy"))
			for _, p := range ins {
				x, err := tensor.ReadNPYFile(p)
				if err != nil {
					t.Fatal(err)
				}
				n := strings.TrimSuffix(filepath.Base(p), ".npy")
				inputs[n], shapes[n] = x, x.Type.Shape
			}
			m, err := onnx.ImportFile(f, onnx.Options{Shapes: shapes})
			if err != nil {
				t.Fatal(err)
			}
			weights, err := m.Weights.Map()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ref.Run(m.Graph, inputs, weights)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range m.Outputs {
				want, err := tensor.ReadNPYFile(filepath.Join("testdata/exported", name+"_outputs", o.ONNX+".npy"))
				if err != nil {
					t.Fatal(err)
				}
				g := got[o.IR]
				if !g.Type.Equal(want.Type) {
					t.Fatalf("%s is %s, PyTorch's %s", o.ONNX, g.Type, want.Type)
				}
				rel, _ := tolerance.Tolerance(want.Type.DType, false, 0)
				abs := tolerance.OutputFloor(rel, want.F)
				for i := range want.F {
					if !tolerance.Within(g.F[i], want.F[i], rel, abs) {
						t.Fatalf("%s[%d] = %v, PyTorch %v (rel %g, abs %g)", o.ONNX, i, g.F[i], want.F[i], rel, abs)
					}
				}
			}
		})
	}
}
