package ptx

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
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
		switch r.IntN(6) {
		case 5: // concat of two or three views along a dim of size ≥ 2
			if len(s) == 0 {
				return view(s, 0)
			}
			ax := r.IntN(len(s))
			if s[ax] < 2 {
				return view(s, depth-1)
			}
			var parts []*ir.Value
			rem := s[ax]
			for rem > 0 {
				k := 1 + r.IntN(rem)
				if len(parts) == 2 {
					k = rem
				}
				ps := s.Clone()
				ps[ax] = k
				parts = append(parts, view(ps, depth-1))
				rem -= k
			}
			if len(parts) == 1 {
				return parts[0]
			}
			return add("concat", ir.Attrs{"axis": ax}, parts...)
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

// Random dot_generals: batch dims, split free and contracting dims, operands read through
// transposes and reshapes (strided or not), optional f16 and tf32. Results within tolerance.
func TestRandomMatmuls(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		g := randomDotGraph(r)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			k := Kernel{Name: "k_random_dot", Graph: g}
			if _, _, err := Generate(k, Target{SM: 80}); err != nil {
				t.Logf("%v\n%s", err, g) // an unsupported fusion must say so, never generate wrong code
				return
			}
			checkKernel(t, k, inputsFor(g, uint64(seed), 1), false)
		})
	}
}

func randomDotGraph(r *rand.Rand) *ir.Graph {
	g := ir.NewGraph("dot")
	dt := []ir.DType{ir.F32, ir.F32, ir.F16}[r.IntN(3)]
	size := func() int { return []int{1, 3, 4, 8, 16, 20}[r.IntN(6)] }
	nb := r.IntN(3)
	var batch []int
	for range nb {
		batch = append(batch, []int{1, 2, 3}[r.IntN(3)])
	}
	m := []int{size()}
	if r.IntN(3) == 0 {
		m = append(m, size())
	}
	n, k := size(), []int{size()}
	if r.IntN(3) == 0 {
		k = append(k, []int{2, 4}[r.IntN(2)])
	}
	// operand layout [batch..., free..., contract...], then a random transpose of an input
	operand := func(name string, free []int) (*ir.Value, []int, []int) {
		logical := append(append(append(ir.Shape{}, batch...), free...), k...)
		perm := r.Perm(len(logical))
		if r.IntN(2) == 0 {
			for i := range perm {
				perm[i] = i
			}
		}
		src := make(ir.Shape, len(logical))
		for i, p := range perm {
			src[p] = logical[i]
		}
		var v *ir.Value
		in := g.Input(name, ir.Type{DType: dt, Shape: src}, nil)
		v = in
		if !slices.Equal(perm, identity(len(perm))) {
			v = g.Add("transpose", ir.Type{DType: dt, Shape: logical}, ir.Attrs{"perm": perm}, in)
		}
		var bd, cd []int
		for i := range nb {
			bd = append(bd, i)
		}
		for i := range k {
			cd = append(cd, nb+len(free)+i)
		}
		return v, bd, cd
	}
	lhs, lb, lc := operand("a", m)
	rhs, rb, rc := operand("b", []int{n})
	outShape := append(append(append(ir.Shape{}, batch...), m...), n)
	attrs := ir.Attrs{"lhs_contract": lc, "rhs_contract": rc}
	if nb > 0 {
		attrs["lhs_batch"], attrs["rhs_batch"] = lb, rb
	}
	d := g.Add("dot_general", ir.Type{DType: dt, Shape: outShape}, attrs, lhs, rhs)
	y := d
	if r.IntN(2) == 0 {
		bias := g.Param("bias", ir.Type{DType: dt, Shape: ir.Shape{n}}, nil)
		bb := g.Add("broadcast_in_dim", d.Type, ir.Attrs{"shape": []int(outShape.Clone()), "dims": []int{len(outShape) - 1}}, bias)
		y = g.Add("add", d.Type, nil, d, bb)
	}
	g.SetOutput("y", y)
	return g
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// Random reductions: a fused elementwise producer, any contiguous block of axes (row, column
// and full reductions), keepdims or not, an epilogue on the result, and for trailing axes
// sometimes a second reduction over the producer minus the broadcast first result.
func TestRandomReductions(t *testing.T) {
	n := 80
	if testing.Short() {
		n = 20
	}
	var kernels []Kernel
	for seed := range n {
		kernels = append(kernels, Kernel{Name: fmt.Sprintf("k_rred%d", seed), Graph: randomReduceGraph(rand.New(rand.NewPCG(uint64(seed), 13)))})
	}
	assembleBatch(t, kernels)
	for i, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			checkKernel(t, k, inputsFor(k.Graph, uint64(i), 1.5), false)
		})
	}
}

func randomReduceGraph(r *rand.Rand) *ir.Graph {
	g := ir.NewGraph("rred")
	shape := make(ir.Shape, 1+r.IntN(3))
	for i := range shape {
		shape[i] = []int{1, 2, 3, 5, 8, 33, 70}[r.IntN(7)]
	}
	ty := ir.Type{DType: ir.F32, Shape: shape}
	x := g.Input("x", ty, nil)
	y := g.Input("y", ty, nil)
	prod := g.Add([]string{"mul", "add", "max"}[r.IntN(3)], ty, nil, x, y)
	lo := r.IntN(len(shape))
	hi := lo + r.IntN(len(shape)-lo)
	var axes []int
	for a := lo; a <= hi; a++ {
		axes = append(axes, a)
	}
	keep := r.IntN(2) == 0
	op := []string{"reduce_sum", "reduce_max", "reduce_min", "reduce_sum"}[r.IntN(4)]
	attrs := ir.Attrs{"axes": axes, "keepdims": keep}
	rt, err := ops.Infer(op, []ir.Type{ty}, attrs)
	if err != nil {
		panic(err)
	}
	red := g.Add(op, rt, attrs, prod)
	out := red
	if r.IntN(2) == 0 {
		out = g.Add("neg", rt, nil, red)
	}
	g.SetOutput("r", out)
	if hi == len(shape)-1 && keep && r.IntN(2) == 0 {
		// layer-norm-like: reduce again over prod − broadcast(red), output the full shape too
		dims := make([]int, len(shape))
		for i := range dims {
			dims[i] = i
		}
		b := g.Add("broadcast_in_dim", ty, ir.Attrs{"shape": []int(shape.Clone()), "dims": dims}, red)
		d := g.Add("sub", ty, nil, prod, b)
		sq := g.Add("mul", ty, nil, d, d)
		red2 := g.Add("reduce_sum", rt, attrs, sq)
		g.SetOutput("r2", red2)
		g.SetOutput("d", d)
	}
	return g
}
