package nn_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// oddDir holds PyTorch's values of the layers in f32, f16 and bf16 on inputs of sizes 1, 3, 7
// and 33 (scripts/torch_layers_reference.py --odd): CASE.DT.safetensors, the case of torchCases.
var oddDir = filepath.Join("testdata", "torch_odd")

var oddDTypes = map[string]ir.DType{"f32": ir.F32, "f16": ir.F16, "bf16": ir.BF16}

// oddCase is one case file: its layer, dtype and PyTorch's tensors by key.
type oddCase struct {
	name string
	dt   ir.DType
	vals map[string]*tensor.Tensor
}

func readOddCases(t *testing.T) []oddCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(oddDir, "*.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []oddCase
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".safetensors")
		i := strings.LastIndexByte(base, '.')
		dt, ok := oddDTypes[base[i+1:]]
		if i < 0 || !ok {
			t.Fatalf("%s: want CASE.f32, CASE.f16 or CASE.bf16", f)
		}
		arrays, _, err := tensorio.ReadSafetensorsFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := oddCase{name: base[:i], dt: dt, vals: map[string]*tensor.Tensor{}}
		for k, a := range arrays {
			if c.vals[k], err = tensor.FromArray(a); err != nil {
				t.Fatalf("%s: %s: %v", f, k, err)
			}
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		t.Fatalf("no cases in %s", oddDir)
	}
	return cs
}

// build is the case's graph in c.dt: the input and the module's parameters in c.dt (PyTorch's
// model.to(dtype)), the loss Σ y·u where PyTorch has gradients.
func (c oddCase) build(t *testing.T) torchCase {
	t.Helper()
	fn := torchCases[c.name]
	if fn == nil {
		t.Fatalf("no case builds %s", c.name)
	}
	x := c.vals["x"]
	if x == nil || x.Type.DType != c.dt {
		t.Fatalf("x is missing or not %s", c.dt)
	}
	n := 0
	for k, v := range c.vals {
		if strings.HasPrefix(k, "p.") {
			n++
			if v.Type.DType.IsFloat() && v.Type.DType != c.dt {
				t.Fatalf("PyTorch's %s is %v, not %s", k, v.Type, c.dt)
			}
		}
	}
	return torchGraph(t, c.name, fn, c.dt, x, func(name string) *tensor.Tensor { return c.vals[name] }, n)
}

// compareTorch holds got, gcomp's reference interpreter's value, to PyTorch's want. Neither is
// exact, so element i may differ by what either computation may round: max(rel·|want|,
// rel·RMS(want), 2·bound_i), rel the tolerance of dt (2e-2 for f16 and bf16, 1e-5 for f32, as
// check.CompareIn holds a value without its graph) and bound_i gcomp's own error bound of the
// element (tolerance.Bounds, as check.CompareBound holds a kernel to the reference: it follows
// the magnitudes of the terms a sum cancels). NaN agrees with NaN only; integers are exact.
func compareTorch(t *testing.T, what string, got *tensor.Tensor, b tolerance.Bound, want *tensor.Tensor, dt ir.DType) {
	t.Helper()
	if got == nil || want == nil {
		t.Errorf("%s: no value (gcomp %v, PyTorch %v)", what, got != nil, want != nil)
		return
	}
	if !got.Type.Shape.Equal(want.Type.Shape) || got.Type.DType.IsFloat() != want.Type.DType.IsFloat() {
		t.Errorf("%s is %v, PyTorch's %v", what, got.Type, want.Type)
		return
	}
	if got.Type.DType != want.Type.DType {
		got = tensor.FromFloats(want.Type, reftest.Floats(got))
	}
	var errs []float64
	if want.Type.DType.IsFloat() {
		rel, _ := tolerance.Tolerance(dt, false, 0)
		floor := tolerance.OutputFloor(rel, reftest.Floats(want))
		errs = make([]float64, want.Len())
		for i := range errs {
			errs[i] = max(rel*math.Abs(want.At(i)), floor, 2*b.At(i))
		}
	}
	if o := check.CompareBound(what, got, tolerance.Bound{Val: want, Err: errs}, dt, false); !o.Pass() {
		t.Errorf("%s: %d of %d elements outside the %s tolerance (max abs %g, max rel %g); first %s",
			what, o.Bad, want.Len(), dt, o.MaxAbs, o.MaxRel, o.First)
	}
}

// TestOddSizesAgainstPyTorch checks every layer in f32, f16 and bf16 on odd sizes against
// PyTorch computing in that dtype: forward (with the training step's buffers) and the gradients of
// Σ y·u with respect to the input and the parameters, on the reference interpreter and compiled
// on the PTX simulator (which is also held to the reference interpreter, as check.Run holds it).
func TestOddSizesAgainstPyTorch(t *testing.T) {
	seen := map[string]int{}
	for _, hc := range readOddCases(t) {
		seen[hc.name]++
		t.Run(hc.name+"."+hc.dt.String(), func(t *testing.T) {
			c := hc.build(t)
			g := c.g
			if hc.vals["gx"] != nil {
				var err error
				if g, err = autodiff.Grad(c.g, "loss", c.wrt); err != nil {
					t.Fatal(err)
				}
				if err := ops.Verify(g); err != nil {
					t.Fatal(err)
				}
			}
			got, bounds := runBounded(t, g, c)
			hc.compareAll(t, "", c, got, bounds)
			if testing.Short() {
				return // -short: the simulator runs every case
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sim, err := simProgram(t, res.Artifact, c.params).Run(c.inputs)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range g.Outputs {
				want := tolerance.Bound{Val: got[o.Name], Err: bounds[o.Name].Err}
				if r := check.CompareBound(o.Name, sim.Outputs[o.Name], want, tolerance.Precision(o.Value), false); !r.Pass() {
					t.Errorf("simulator against the reference interpreter: %s: %d elements outside tolerance (max abs %g, max rel %g); first %s",
						o.Name, r.Bad, r.MaxAbs, r.MaxRel, r.First)
				}
			}
			hc.compareAll(t, "simulator: ", c, sim.Outputs, bounds)
		})
	}
	// Every layer has a file of each dtype.
	for name := range torchCases {
		if seen[name] != len(oddDTypes) {
			t.Errorf("case %s has %d files in %s, want one per dtype, %d", name, seen[name], oddDir, len(oddDTypes))
		}
	}
}

// compareAll holds the outputs vals of the case's graph (forward, or with gradients) to PyTorch's:
// the layer's outputs, the buffers after a training step and the gradients. bounds are the
// reference interpreter's error bounds.
func (hc oddCase) compareAll(t *testing.T, label string, c torchCase, vals map[string]*tensor.Tensor, bounds map[string]tolerance.Bound) {
	t.Helper()
	for _, name := range c.outs {
		out := strings.ReplaceAll(name, ".", "_")
		compareTorch(t, label+name, vals[out], bounds[out], hc.vals[name], hc.dt)
	}
	for _, o := range c.g.Outputs {
		if key, ok := strings.CutPrefix(o.Name, frontend.BufferPrefix); ok {
			compareTorch(t, label+o.Name, vals[o.Name], bounds[o.Name], hc.vals["b."+strings.TrimPrefix(key, ".")], hc.dt)
		}
	}
	if hc.vals["gx"] == nil {
		return
	}
	for _, name := range c.wrt {
		key := "gx"
		if name != "x" {
			key = "gp." + strings.TrimPrefix(name, ".")
		}
		out := autodiff.GradPrefix + name
		compareTorch(t, label+"d loss/d "+name, vals[out], bounds[out], hc.vals[key], hc.dt)
	}
}

// runBounded runs g on the reference interpreter with c's values, and gives its outputs' error
// bounds.
func runBounded(t *testing.T, g *ir.Graph, c torchCase) (map[string]*tensor.Tensor, map[string]tolerance.Bound) {
	t.Helper()
	got, err := ref.Run(g, c.inputs, c.params)
	if err != nil {
		t.Fatal(err)
	}
	bounds, err := tolerance.Bounds(g, c.inputs, c.params, false)
	if err != nil {
		t.Fatal(err)
	}
	return got, bounds
}
