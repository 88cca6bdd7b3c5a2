package ptx

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Random loop kernels: chains of views (transpose, reshape, slice, broadcast_in_dim, pad) over
// inputs, mixed by elementwise ops, at random shapes whose last dim is often a multiple of 4 (so
// element groups pass through the views). Each must match the reference bit for bit: this is
// where index arithmetic and vector groups would go wrong.
func TestRandomLoopKernels(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	var kernels []Kernel
	for seed := range n {
		kernels = append(kernels, Kernel{Name: fmt.Sprintf("k_random%d", seed), Graph: randomLoopGraph(rand.New(rand.NewPCG(uint64(seed), 7)))})
	}
	assembleBatch(t, kernels)
	// The generator must reach the vector paths through views, not only scalar code.
	vec := 0
	for _, k := range kernels {
		text, _, _ := Generate(k, Target{SM: 80})
		if regexp.MustCompile(`ld\.global\.v[24]`).MatchString(text) {
			vec++
		}
	}
	if vec < len(kernels)/4 {
		t.Errorf("only %d of %d random kernels use vector loads", vec, len(kernels))
	}
	for i, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			checkKernel(t, k, inputsFor(k.Graph, uint64(i), 2), true)
		})
	}
}

func randomLoopGraph(r *rand.Rand) *ir.Graph {
	g := ir.NewGraph("random")
	// The output shape: 1 to 3 dims.
	out := make(ir.Shape, 1+r.IntN(3))
	for i := range out {
		out[i] = []int{1, 2, 3, 4, 5, 8, 12}[r.IntN(7)]
	}
	if r.IntN(3) > 0 {
		out[len(out)-1] = []int{4, 8, 12, 16}[r.IntN(4)] // element groups need whole rows
	}
	inputs := 0
	add := func(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		types := make([]ir.Type, len(args))
		for i, a := range args {
			types[i] = a.Type
		}
		ty, err := ops.Infer(op, types, attrs)
		if err != nil {
			panic(fmt.Sprintf("%s %v: %v", op, attrs, err))
		}
		return g.Add(op, ty, attrs, args...)
	}
	// view returns a value of shape s built from a fresh input through random views.
	var view func(s ir.Shape, depth int) *ir.Value
	view = func(s ir.Shape, depth int) *ir.Value {
		if depth == 0 || r.IntN(4) == 0 {
			inputs++
			return g.Input(fmt.Sprintf("x%d", inputs), ir.Type{DType: ir.F32, Shape: s.Clone()}, nil)
		}
		switch r.IntN(5) {
		case 0: // transpose of a permuted shape
			perm := r.Perm(len(s))
			src := make(ir.Shape, len(s))
			for i, p := range perm {
				src[p] = s[i]
			}
			return add("transpose", ir.Attrs{"perm": perm}, view(src, depth-1))
		case 1: // reshape from a shape with the same count
			n := s.NumElements()
			var src ir.Shape
			for _, d := range []int{2, 3, 4} {
				if n%d == 0 && r.IntN(2) == 0 {
					src = ir.Shape{n / d, d}
					break
				}
			}
			if src == nil {
				src = ir.Shape{n}
			}
			return add("reshape", ir.Attrs{"shape": []int(s.Clone())}, view(src, depth-1))
		case 2: // slice of a larger shape
			src := make(ir.Shape, len(s))
			start, limit, stride := make([]int, len(s)), make([]int, len(s)), make([]int, len(s))
			for i, d := range s {
				stride[i] = 1 + r.IntN(2)
				start[i] = r.IntN(3)
				limit[i] = start[i] + (d-1)*stride[i] + 1
				src[i] = limit[i] + r.IntN(2)
			}
			return add("slice", ir.Attrs{"start": start, "limit": limit, "stride": stride}, view(src, depth-1))
		case 3: // broadcast from a subset of dims (some kept as 1)
			var dims []int
			var src ir.Shape
			for i, d := range s {
				switch r.IntN(3) {
				case 0:
				case 1:
					dims, src = append(dims, i), append(src, d)
				case 2:
					dims, src = append(dims, i), append(src, 1)
				}
			}
			return add("broadcast_in_dim", ir.Attrs{"shape": []int(s.Clone()), "dims": dims}, view(src, depth-1))
		default: // pad of a smaller shape
			src := make(ir.Shape, len(s))
			low, high := make([]int, len(s)), make([]int, len(s))
			for i, d := range s {
				low[i] = r.IntN(min(2, d))
				high[i] = r.IntN(min(2, d-low[i]))
				src[i] = d - low[i] - high[i]
				if src[i] < 1 {
					src[i], low[i], high[i] = d, 0, 0
				}
			}
			return add("pad", ir.Attrs{"low": low, "high": high, "value": -0.5}, view(src, depth-1))
		}
	}
	a := view(out, 3)
	b := view(out, 3)
	ops2 := []string{"add", "mul", "max", "sub"}
	v := add(ops2[r.IntN(len(ops2))], nil, a, b)
	if r.IntN(2) == 0 {
		v = add(ops2[r.IntN(len(ops2))], nil, v, view(out, 2))
	}
	g.SetOutput("y", v)
	if r.IntN(3) == 0 {
		g.SetOutput("z", add("relu", nil, a))
	}
	return g
}
