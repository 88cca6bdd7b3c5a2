package examples_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// loadExample loads examples/NAME/model.go the way gcomp does (through the interpreter), naming
// it by its path from the repository root in positions.
func loadExample(t *testing.T, name string) *ir.Graph {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(name, "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := load.Source("examples/"+name+"/model.go", src, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGolden pins the printed IR of every example in testdata/golden/NAME.txtar.
func TestGolden(t *testing.T) {
	for _, ex := range examples.Tutorials {
		name := ex.Name
		t.Run(name, func(t *testing.T) {
			g := loadExample(t, name)
			path, comment := golden.Example("..", name)
			golden.CheckSections(t, path, comment, "source", []txtar.File{{Name: "model.gir", Data: []byte(g.String())}})
		})
	}
}

// TestAgainstPyTorch runs every example on the reference interpreter with the weights of
// `gcomp init-weights` and the inputs of `gcomp run` (seed 0), and compares with the float64
// outputs PyTorch computed for the same weights and inputs (scripts/torch_reference.sh wrote
// testdata/torch/). PyTorch loaded the weights with load_state_dict(strict=True), so this also
// pins the parameter names and layouts to PyTorch's.
func TestAgainstPyTorch(t *testing.T) {
	for _, ex := range examples.Tutorials {
		name := ex.Name
		t.Run(name, func(t *testing.T) {
			g := loadExample(t, name)
			_, _, outs := runSeeded(t, g)
			compareTorch(t, "reference interpreter", filepath.Join("..", "testdata", "torch", name), g, outs, 1e-5)
		})
	}
}

// runSeeded runs g on the reference interpreter with the weights of `gcomp init-weights` and the
// inputs of `gcomp run` (seed 0).
func runSeeded(t *testing.T, g *ir.Graph) (inputs, params, outs map[string]*tensor.Tensor) {
	t.Helper()
	inputs, params, err := tensor.SeededValues(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	if outs, err = ref.Run(g, inputs, params); err != nil {
		t.Fatal(err)
	}
	return inputs, params, outs
}

// compareTorch holds every output of g to PyTorch's float64 values in dir/NAME.npy: f32
// arithmetic against a float64 oracle, a few f32 ulps per layer (relative 1e-4 above atol).
func compareTorch(t *testing.T, route, dir string, g *ir.Graph, outs map[string]*tensor.Tensor, atol float64) {
	t.Helper()
	const rtol = 1e-4
	for _, o := range g.Outputs {
		want, err := tensor.ReadNPYFile(filepath.Join(dir, o.Name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		got := outs[o.Name]
		if !got.Type.Shape.Equal(want.Type.Shape) {
			t.Fatalf("%s: %s: shape %v, PyTorch has %v", route, o.Name, got.Type.Shape, want.Type.Shape)
		}
		worst, at := 0.0, 0
		for i := range want.F {
			d := math.Abs(got.At(i) - want.F[i])
			if !(d <= atol+rtol*math.Abs(want.F[i])) {
				t.Fatalf("%s: %s[%d] = %v, PyTorch %v", route, o.Name, i, got.At(i), want.F[i])
			}
			if d > worst {
				worst, at = d, i
			}
		}
		t.Logf("%s: %s: %d values, max |got - torch| = %.3g at %d", route, o.Name, len(want.F), worst, at)
	}
}
