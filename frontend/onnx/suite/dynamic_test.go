package suite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// TestExportedDynamic imports torch exports with a dynamic axis (scripts/export_dynamic.py) with
// --max-shape bounding it, and runs the one graph at three sizes each on the reference
// interpreter against PyTorch's outputs. The ResNet-18-shaped model is then built once and run
// at batches 1, 3 and 8 on the memchecked simulator (smaller sizes first, so a read past the
// run's rows is of memory never written), against PyTorch and the reference; so is the
// transformer block, whose symbolic seq follows a static batch, at seq 1, 7 and 512.
func TestExportedDynamic(t *testing.T) {
	for _, c := range []struct {
		name    string
		max     []int
		dim     string
		sizes   []int
		refused string // the compiler's refusal; "" builds and runs on the simulator
	}{
		{"resnet_dyn", []int{8, 3, 32, 32}, "batch", []int{1, 3, 8}, ""},
		{"seq_attn", []int{2, 512, 16}, "seq", []int{1, 7, 512}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "dynamic")
			m, err := onnx.ImportFile(filepath.Join(dir, c.name+"_opset13.onnx"), onnx.Options{MaxShapes: map[string][]int{"x": c.max}})
			if err != nil {
				t.Fatal(err)
			}
			if g := m.Graph; len(g.Dims) != 1 || g.Dims[0].Name != c.dim || g.Dims[0].Lo != 1 {
				t.Fatalf("dims %v, want %s in [1,bound]", g.Dims, c.dim)
			}
			weights, err := m.Weights.Map()
			if err != nil {
				t.Fatal(err)
			}
			xs, ys := map[int]*tensor.Tensor{}, map[int]*tensor.Tensor{}
			for _, n := range c.sizes {
				sub := filepath.Join(dir, fmt.Sprintf("%s_size%d", c.name, n))
				if xs[n], err = tensor.ReadNPYFile(filepath.Join(sub, "x.npy")); err != nil {
					t.Fatal(err)
				}
				if ys[n], err = tensor.ReadNPYFile(filepath.Join(sub, "y.npy")); err != nil {
					t.Fatal(err)
				}
				got, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": xs[n]}, weights)
				if err != nil {
					t.Fatalf("size %d: %v", n, err)
				}
				within(t, fmt.Sprintf("size %d: reference: y", n), got["y"], ys[n])
			}
			res, err := compiler.Compile(m.Graph, compiler.Options{})
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("compiled: err %v, want a refusal naming %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if testing.Short() {
				return
			}
			p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := p.SetParams(weights); err != nil {
				t.Fatal(err)
			}
			for _, n := range c.sizes {
				got, err := p.Run(map[string]*tensor.Tensor{"x": xs[n]})
				if err != nil {
					t.Fatalf("size %d: %v", n, err)
				}
				within(t, fmt.Sprintf("size %d: simulator: y", n), got.Outputs["y"], ys[n])
			}
		})
	}
}

// within compares output what with PyTorch's want by internal/tolerance's rule for its dtype.
func within(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if got == nil || !got.Type.Equal(want.Type) {
		t.Fatalf("%s is %v, PyTorch's %s", what, got, want.Type)
	}
	rel, _ := tolerance.Tolerance(want.Type.DType, false, 0)
	abs := tolerance.OutputFloor(rel, want.F)
	for i := range want.F {
		if !tolerance.Within(got.F[i], want.F[i], rel, abs) {
			t.Fatalf("%s[%d] = %v, PyTorch %v (rel %g, abs %g)", what, i, got.F[i], want.F[i], rel, abs)
		}
	}
}
