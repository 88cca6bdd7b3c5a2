package passes_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// bindings returns seeded random values for g's inputs and parameters (parameters random too,
// so that zero-initialized biases still test something).
func bindings(g *ir.Graph, seed uint64) (inputs, params map[string]*tensor.Tensor) {
	inputs, params = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = tensor.RandomInput(v, seed)
	}
	for _, v := range g.Params() {
		params[v.Name] = tensor.RandomInput(v, seed)
	}
	return inputs, params
}

// runKernels executes a kernel graph with the reference interpreter, one kernel body at a time,
// passing tensors through named buffers as a device would.
func runKernels(kg *passes.KernelGraph, inputs, params map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	bufs := map[string]*tensor.Tensor{}
	for name, t := range inputs {
		bufs[name] = t
	}
	for name, t := range params {
		bufs[name] = t
	}
	for _, k := range kg.Kernels {
		in := map[string]*tensor.Tensor{}
		for _, b := range k.Reads {
			t, ok := bufs[b.Name]
			if !ok {
				return nil, fmt.Errorf("kernel %s reads %s before it exists", k.Name, b.Name)
			}
			in[b.Name] = t
		}
		out, err := ref.Run(k.Body, in, nil)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		for _, b := range k.Writes {
			bufs[b.Name] = out[b.Name]
		}
	}
	res := map[string]*tensor.Tensor{}
	for _, b := range kg.Outputs {
		res[b.Name] = bufs[b.Name]
	}
	return res, nil
}

// sameBits reports the first element where two tensors differ, comparing floats bit for bit
// (every rewrite is exact, so optimized and unoptimized results are identical).
func sameBits(a, b *tensor.Tensor) error {
	if a == nil || b == nil {
		return fmt.Errorf("missing tensor")
	}
	if !a.Type.Equal(b.Type) {
		return fmt.Errorf("type %s vs %s", a.Type, b.Type)
	}
	for i := 0; i < a.Len(); i++ {
		x, y := a.At(i), b.At(i)
		if math.Float64bits(x) != math.Float64bits(y) && !(math.IsNaN(x) && math.IsNaN(y)) {
			return fmt.Errorf("element %d: %v vs %v", i, x, y)
		}
	}
	return nil
}

// checkEquivalent runs g with the reference interpreter and the result of the pipeline kernel
// by kernel, and fails unless every output is bit-identical.
func checkEquivalent(t testing.TB, g *ir.Graph, res *passes.Result, seed uint64) {
	t.Helper()
	inputs, params := bindings(g, seed)
	want, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Skipf("reference run of the source graph: %v", err)
	}
	got, err := runKernels(res.Kernels, inputs, params)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Kernels)
	}
	if hasAttention(res.Graph) {
		// The attention pass rounds once where the decomposition rounded after every op: the
		// kernels compute the pipeline's graph bit for bit, and that graph the source's values
		// within f32's rounding.
		fused, err := ref.Run(res.Graph, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Outputs {
			if err := near(want[o.Name], fused[o.Name]); err != nil {
				t.Fatalf("output %s: the graph with attention ops: %v", o.Name, err)
			}
		}
		want = fused
	}
	for _, o := range g.Outputs {
		if err := sameBits(want[o.Name], got[o.Name]); err != nil {
			t.Fatalf("output %s: %v\nsource:\n%s\nkernels:\n%s", o.Name, err, g, res.Kernels)
		}
	}
}

func hasAttention(g *ir.Graph) bool {
	for _, v := range g.Values {
		if v.Op == ops.AttentionOp {
			return true
		}
	}
	return false
}

// near compares float tensors within a relative 1e-5 of the largest magnitude.
func near(want, got *tensor.Tensor) error {
	if !got.Type.Equal(want.Type) {
		return fmt.Errorf("type %s, want %s", got.Type, want.Type)
	}
	scale := 0.0
	for _, w := range want.F {
		scale = math.Max(scale, math.Abs(w))
	}
	for i, w := range want.F {
		if d := math.Abs(got.F[i] - w); !(d <= 1e-5*(1+scale)) && !(math.IsNaN(w) && math.IsNaN(got.F[i])) {
			return fmt.Errorf("element %d: %v, want %v", i, got.F[i], w)
		}
	}
	return nil
}
