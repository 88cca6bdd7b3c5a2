package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// gcase is one gradient check: f64 parameters p0, p1, ... of the given shapes, drawn by gen
// (default U(-1, 1)), an op applied by build, and the loss Σ out·r for a fixed random r so that
// every output element matters with its own weight.
type gcase struct {
	name   string
	op     string // the op the case covers
	shapes [][]int
	gen    func(r *rand.Rand, i int) float64 // value of element i of any parameter
	build  func(e *Emitter, p []*ir.Value) *ir.Value
	coarse bool // rounds through f32: a larger step and tolerance
}

func uniform(r *rand.Rand, _ int) float64 { return r.Float64()*2 - 1 }

func positive(r *rand.Rand, _ int) float64 { return 0.5 + r.Float64() }

// apart draws values far from each other (no ties for max, min, pooling, abs or relu kinks).
func apart(r *rand.Rand, i int) float64 {
	sign := 1.0
	if r.IntN(2) == 0 {
		sign = -1
	}
	return sign * (0.1 + float64(i%97)*0.05 + r.Float64()*0.01)
}

func un(op string, gen func(*rand.Rand, int) float64) gcase {
	return gcase{name: op, op: op, shapes: [][]int{{3, 4}}, gen: gen,
		build: func(e *Emitter, p []*ir.Value) *ir.Value { return e.Op(op, nil, p[0]) }}
}

func bin(op string, gen func(*rand.Rand, int) float64) gcase {
	return gcase{name: op, op: op, shapes: [][]int{{3, 4}, {3, 4}}, gen: gen,
		build: func(e *Emitter, p []*ir.Value) *ir.Value { return e.Op(op, nil, p[0], p[1]) }}
}

func with(op, name string, attrs ir.Attrs, shapes ...[]int) gcase {
	return gcase{name: name, op: op, shapes: shapes,
		build: func(e *Emitter, p []*ir.Value) *ir.Value { return e.Op(op, attrs.Clone(), p...) }}
}

func gcases() []gcase {
	cs := []gcase{
		un("neg", nil), un("abs", apart), un("exp", nil), un("log", positive), un("sqrt", positive),
		un("rsqrt", positive), un("tanh", nil), un("sigmoid", nil), un("relu", apart), un("erf", nil),
		un("sin", nil), un("cos", nil),
		bin("add", nil), bin("sub", nil), bin("mul", nil), bin("div", positive), bin("pow", positive),
		bin("max", apart), bin("min", apart),
		{name: "select", op: "select", shapes: [][]int{{3, 4}, {3, 4}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			pred := e.Op("gt", nil, e.Op("iota", ir.Attrs{"shape": []int{3, 4}, "dim": 1, "dtype": ir.I32}), e.Const(1, ir.T(ir.I32, 3, 4)))
			return e.Select(pred, p[0], p[1])
		}},
		{name: "cast_f32", op: "cast", shapes: [][]int{{3, 4}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			// Through f32 and back: the gradient of a float cast is the cast back.
			return e.Cast(e.Mul(e.Cast(p[0], ir.F32), e.Cast(p[0], ir.F32)), ir.F64)
		}, coarse: true},
		with("reduce_sum", "reduce_sum", ir.Attrs{"axes": []int{1}}, []int{3, 4, 2}),
		with("reduce_sum", "reduce_sum_keepdims", ir.Attrs{"axes": []int{0, 2}, "keepdims": true}, []int{3, 4, 2}),
		{name: "reduce_prod", op: "reduce_prod", shapes: [][]int{{3, 4}}, gen: positive, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			return e.Op("reduce_prod", ir.Attrs{"axes": []int{1}}, p[0])
		}},
		{name: "reduce_max", op: "reduce_max", shapes: [][]int{{3, 4}}, gen: apart, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			return e.Op("reduce_max", ir.Attrs{"axes": []int{0}}, p[0])
		}},
		{name: "reduce_min", op: "reduce_min", shapes: [][]int{{3, 4}}, gen: apart, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			return e.Op("reduce_min", ir.Attrs{"axes": []int{0, 1}, "keepdims": true}, p[0])
		}},
		with("dot_general", "matmul", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}, []int{3, 4}, []int{4, 5}),
		with("dot_general", "linear", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, []int{3, 4}, []int{5, 4}),
		with("dot_general", "batched_permuted", ir.Attrs{"lhs_batch": []int{2}, "rhs_batch": []int{0},
			"lhs_contract": []int{0}, "rhs_contract": []int{2}}, []int{4, 3, 2}, []int{2, 5, 4}),
		with("dot_general", "two_contract", ir.Attrs{"lhs_contract": []int{2, 0}, "rhs_contract": []int{0, 1}}, []int{2, 3, 4}, []int{4, 2, 3}),
		with("dot_general", "outer", ir.Attrs{}, []int{3}, []int{2}),
		with("conv2d", "conv2d", ir.Attrs{}, []int{2, 3, 6, 5}, []int{4, 3, 3, 2}),
		with("conv2d", "conv2d_stride_pad", ir.Attrs{"stride": []int{2, 3}, "padding": []int{1, 2}}, []int{2, 2, 7, 8}, []int{3, 2, 3, 3}),
		with("conv2d", "conv2d_dilation", ir.Attrs{"dilation": []int{2, 1}, "padding": []int{1, 0}, "stride": []int{1, 2}}, []int{1, 2, 7, 6}, []int{2, 2, 3, 2}),
		with("conv2d", "conv2d_groups", ir.Attrs{"groups": 2, "stride": []int{2, 2}, "padding": []int{1, 1}}, []int{2, 4, 5, 5}, []int{6, 2, 3, 3}),
		with("conv2d", "conv2d_big_pad", ir.Attrs{"padding": []int{3, 2}}, []int{1, 1, 3, 3}, []int{2, 1, 2, 2}),
		{name: "max_pool2d", op: "max_pool2d", shapes: [][]int{{2, 2, 6, 5}}, gen: apart, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			return e.Op("max_pool2d", ir.Attrs{"kernel": []int{2, 2}}, p[0])
		}},
		{name: "max_pool2d_overlap_pad", op: "max_pool2d", shapes: [][]int{{1, 2, 7, 6}}, gen: apart, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			return e.Op("max_pool2d", ir.Attrs{"kernel": []int{3, 2}, "stride": []int{2, 1}, "padding": []int{1, 1}}, p[0])
		}},
		with("avg_pool2d", "avg_pool2d", ir.Attrs{"kernel": []int{2, 3}}, []int{2, 2, 5, 7}),
		with("avg_pool2d", "avg_pool2d_pad", ir.Attrs{"kernel": []int{3, 3}, "stride": []int{2, 1}, "padding": []int{1, 1}}, []int{1, 2, 6, 5}),
		with("avg_pool2d", "avg_pool2d_exclude_pad", ir.Attrs{"kernel": []int{3, 2}, "stride": []int{2, 2}, "padding": []int{1, 1}, "count_include_pad": false}, []int{1, 2, 6, 5}),
		with("reshape", "reshape", ir.Attrs{"shape": []int{2, 6}}, []int{3, 4}),
		with("transpose", "transpose", ir.Attrs{"perm": []int{2, 0, 1}}, []int{2, 3, 4}),
		with("broadcast_in_dim", "broadcast", ir.Attrs{"shape": []int{3, 2, 4}, "dims": []int{0, 2}}, []int{3, 4}),
		with("broadcast_in_dim", "broadcast_repeat_permute", ir.Attrs{"shape": []int{4, 5, 3}, "dims": []int{2, 0, 1}}, []int{3, 1, 5}),
		with("broadcast_in_dim", "broadcast_scalar", ir.Attrs{"shape": []int{2, 3}, "dims": []int{}}, []int{}),
		with("slice", "slice", ir.Attrs{"start": []int{1, 0}, "limit": []int{3, 4}}, []int{4, 5}),
		with("slice", "slice_stride", ir.Attrs{"start": []int{0, 1}, "limit": []int{5, 7}, "stride": []int{2, 3}}, []int{6, 7}),
		with("concat", "concat", ir.Attrs{"axis": 1}, []int{2, 3}, []int{2, 1}, []int{2, 2}),
		with("pad", "pad", ir.Attrs{"low": []int{1, 0}, "high": []int{2, 3}, "value": 0.5}, []int{2, 3}),
		{name: "gather", op: "gather", shapes: [][]int{{5, 3}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			idx := e.Op("constant", ir.Attrs{"shape": []int{2, 3}, "dtype": ir.I64, "value": []float64{4, 0, 4, 2, 1, 4}})
			return e.Op("gather", nil, p[0], idx)
		}},
		// Sequence 0 writes at 1, sequence 1 past the end (clamped to S−T = 3), over two heads.
		{name: "update_slice", op: "update_slice", shapes: [][]int{{2, 2, 5, 3}, {2, 2, 2, 3}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			start := e.Op("constant", ir.Attrs{"shape": []int{2}, "dtype": ir.I32, "value": []float64{1, 9}})
			return e.Op("update_slice", ir.Attrs{"axis": 2}, p[0], p[1], start)
		}},
		// attention: q, k, v (and the bias) against finite differences; GQA and MQA sum dk, dv
		// over the query heads of a group, a broadcast bias sums dS over its broadcast dims.
		with("attention", "attention_none", ir.Attrs{"scale": 0.5, "mask": "none"}, []int{1, 2, 3, 4}, []int{1, 2, 5, 4}, []int{1, 2, 5, 3}),
		with("attention", "attention_causal_gqa", ir.Attrs{"scale": 0.7, "mask": "causal"}, []int{2, 4, 3, 4}, []int{2, 2, 4, 4}, []int{2, 2, 4, 2}),
		{name: "attention_position_mqa", op: "attention", shapes: [][]int{{2, 2, 3, 4}, {2, 1, 6, 4}, {2, 1, 6, 3}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			pos := e.Op("constant", ir.Attrs{"shape": []int{2}, "dtype": ir.I64, "value": []float64{0, 2}})
			return e.Op("attention", ir.Attrs{"scale": 0.5, "mask": "position"}, p[0], p[1], p[2], pos)
		}},
		with("attention", "attention_bias_over_batch", ir.Attrs{"scale": 0.5, "mask": "causal", "additive": true},
			[]int{2, 2, 3, 4}, []int{2, 2, 5, 4}, []int{2, 2, 5, 3}, []int{1, 2, 3, 5}),
		{name: "attention_position_bias_over_heads", op: "attention", shapes: [][]int{{2, 2, 2, 4}, {2, 1, 4, 4}, {2, 1, 4, 2}, {2, 1, 2, 4}}, build: func(e *Emitter, p []*ir.Value) *ir.Value {
			pos := e.Op("constant", ir.Attrs{"shape": []int{2}, "dtype": ir.I32, "value": []float64{1, 0}})
			return e.Op("attention", ir.Attrs{"scale": 1.0, "mask": "position", "additive": true}, p[0], p[1], p[2], pos, p[3])
		}},
	}
	return cs
}

// lossGraph builds p → Σ build(p)·r as a graph with the loss as output "loss".
func lossGraph(c gcase, seed uint64) (*ir.Graph, error) {
	g := ir.NewGraph(c.name)
	ps := make([]*ir.Value, len(c.shapes))
	for i, s := range c.shapes {
		ps[i] = g.Param(fmt.Sprintf("p%d", i), ir.T(ir.F64, s...), nil)
	}
	err := Emit(g, func(e *Emitter) {
		out := c.build(e, ps)
		out = e.Cast(out, ir.F64)
		rng := rand.New(rand.NewPCG(seed, 99))
		w := make([]float64, out.Type.Shape.NumElements())
		for i := range w {
			w[i] = rng.Float64()*2 - 1
		}
		r := e.Op("constant", ir.Attrs{"shape": slices.Clone([]int(out.Type.Shape)), "dtype": ir.F64, "value": w})
		g.SetOutput("loss", e.SumAll(e.Mul(out, r)))
	})
	return g, err
}

func TestGradCheck(t *testing.T) {
	for _, c := range gcases() {
		t.Run(c.name, func(t *testing.T) {
			g, err := lossGraph(c, 1)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			params := map[string]*tensor.Tensor{}
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			gen := c.gen
			if gen == nil {
				gen = uniform
			}
			for _, p := range g.Params() {
				names = append(names, p.Name)
				x := tensor.New(p.Type)
				for i := range x.F {
					x.F[i] = gen(rng, i)
				}
				params[p.Name] = x
			}
			h, tol := 1e-6, 1e-5
			if c.coarse {
				h, tol = 1e-2, 1e-3 // exact for the quadratic; f32 rounding is ~1e-7/h
			}
			checkGrad(t, g, nil, params, names, h, tol)
		})
	}
}

// checkGrad compares Grad's gradients of g's output "loss" with respect to names (parameters)
// with central finite differences of step h.
func checkGrad(t *testing.T, g *ir.Graph, inputs, params map[string]*tensor.Tensor, names []string, h, tol float64) {
	t.Helper()
	gg, err := Grad(g, "loss", names)
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Verify(gg); err != nil {
		t.Fatal(err)
	}
	got, err := ref.Run(gg, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	loss := func() float64 {
		out, err := ref.Run(g, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		return out["loss"].F[0]
	}
	for _, name := range names {
		x, an := params[name], got[GradPrefix+name]
		for i := range x.F {
			old := x.F[i]
			x.F[i] = old + h
			up := loss()
			x.F[i] = old - h
			down := loss()
			x.F[i] = old
			num := (up - down) / (2 * h)
			if d := math.Abs(an.F[i] - num); d > 1e-6+tol*math.Abs(num) {
				t.Errorf("d loss/d %s[%d]: analytic %.9g, numeric %.9g", name, i, an.F[i], num)
			}
		}
	}
}

// TestEveryOpHasARule checks that the rule table covers the op table, and that the gradient
// check covers every op with a gradient rule.
func TestEveryOpHasARule(t *testing.T) {
	checked := map[string]bool{}
	for _, c := range gcases() {
		checked[c.op] = true
	}
	for _, op := range ops.All() {
		r, ok := rules[op.Name]
		if !ok {
			t.Errorf("op %s has no row in the gradient rule table", op.Name)
			continue
		}
		// A variadic op without a gradient (attention: 3 to 5 operands) lists every operand it
		// can take; the check cannot know how many, so it asks for at least one.
		if r.grad == nil && (op.Arity == ops.Variadic && len(r.nondiff) == 0 || op.Arity != ops.Variadic && len(r.nondiff) < op.Arity) {
			t.Errorf("op %s: no gradient function, but not every argument is marked non-differentiable", op.Name)
		}
		if r.grad != nil && !checked[op.Name] && op.Class != ops.Custom { // custom: TestCustomNoGradient
			t.Errorf("op %s has a gradient rule but no gradient check case", op.Name)
		}
		if r.grad == nil && r.why == "" {
			t.Errorf("op %s is non-differentiable without a reason", op.Name)
		}
	}
	for name := range rules {
		if _, ok := ops.Lookup(name); !ok {
			t.Errorf("rule for unknown op %s", name)
		}
	}
}

func TestNotDifferentiable(t *testing.T) {
	tests := []struct {
		name  string
		build func(e *Emitter, p *ir.Value) *ir.Value
		want  string
	}{
		{"floor", func(e *Emitter, p *ir.Value) *ir.Value { return e.Op("floor", nil, p) },
			"op floor is not differentiable (argument 0)"},
		{"ceil", func(e *Emitter, p *ir.Value) *ir.Value { return e.Op("ceil", nil, p) },
			"op ceil is not differentiable (argument 0)"},
		// attention's gradient has no gradient of its own (no second derivative).
		{"attention_grad", func(e *Emitter, p *ir.Value) *ir.Value {
			x := e.Reshape(p, []int{1, 1, 1, 2})
			return e.Op("attention_grad", ir.Attrs{"scale": 1.0, "mask": "none", "wrt": "q"}, x, x, x, x, x)
		}, "op attention_grad is not differentiable (argument 0): the second derivative of attention is not written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ir.NewGraph(tt.name)
			p := g.Param("w", ir.T(ir.F32, 2), nil)
			if err := Emit(g, func(e *Emitter) { g.SetOutput("loss", e.SumAll(tt.build(e, p))) }); err != nil {
				t.Fatal(err)
			}
			n := len(g.Values)
			_, err := Grad(g, "loss", []string{"w"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if len(g.Values) != n {
				t.Errorf("Grad changed its input graph")
			}
		})
	}
}

// Masks, integer casts and comparisons off the gradient path are fine: they carry no gradient.
func TestIntegerPathsCarryNoGradient(t *testing.T) {
	g := ir.NewGraph("mask")
	p := g.Param("w", ir.T(ir.F64, 4), nil)
	err := Emit(g, func(e *Emitter) {
		mask := e.Op("gt", nil, p, e.Scalar(0, p))       // bool from a parameter
		asInt := e.Cast(e.MulScalar(p, 10), ir.I32)      // integer cast of a parameter
		back := e.Cast(asInt, ir.F64)                    // constant as far as gradients go
		y := e.Select(mask, e.Mul(p, p), e.Add(p, back)) // p² where p > 0, else p + ⌊10p⌋
		g.SetOutput("loss", e.SumAll(y))
	})
	if err != nil {
		t.Fatal(err)
	}
	gg, err := Grad(g, "loss", []string{"w"})
	if err != nil {
		t.Fatal(err)
	}
	w := tensor.FromFloats(ir.T(ir.F64, 4), []float64{-1.25, 0.5, 2, -0.3})
	out, err := ref.Run(gg, nil, map[string]*tensor.Tensor{"w": w})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 4, 1}
	if !slices.Equal(out["grad.w"].F, want) {
		t.Errorf("grad.w = %v, want %v", out["grad.w"].F, want)
	}
}

func TestGradErrors(t *testing.T) {
	g := ir.NewGraph("e")
	p := g.Param("w", ir.T(ir.F32, 2), nil)
	i := g.Input("n", ir.T(ir.I32, 2), nil)
	_ = Emit(g, func(e *Emitter) {
		g.SetOutput("vec", p)
		g.SetOutput("loss", e.SumAll(p))
		g.SetOutput("count", e.SumAll(i))
	})
	tests := []struct {
		loss string
		wrt  []string
		want string
	}{
		{"nope", []string{"w"}, `has no output "nope"`},
		{"loss", []string{"v"}, `no parameter or input "v"`},
		{"vec", []string{"w"}, "the loss must be a scalar"},
		{"count", []string{"w"}, "the loss must be a float tensor"},
		{"loss", []string{"n"}, "cannot differentiate with respect to n"},
	}
	for _, tt := range tests {
		_, err := Grad(g, tt.loss, tt.wrt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Grad(%s, %v): %v, want %q", tt.loss, tt.wrt, err, tt.want)
		}
	}
}

// Append with a seed is a vector-Jacobian product: the gradient of Σ seed·y for a non-scalar y.
func TestAppendSeed(t *testing.T) {
	g := ir.NewGraph("vjp")
	w := g.Param("w", ir.T(ir.F64, 3), nil)
	seed := g.Input("seed", ir.T(ir.F64, 3), nil)
	var y *ir.Value
	if err := Emit(g, func(e *Emitter) { y = e.Mul(w, w) }); err != nil {
		t.Fatal(err)
	}
	if _, err := Append(g, y, g.Input("bad", ir.T(ir.F32, 3), nil), []*ir.Value{w}); err == nil ||
		!strings.Contains(err.Error(), "the seed is f32[3], the loss f64[3]") {
		t.Errorf("wrong seed type: %v", err)
	}
	grads, err := Append(g, y, seed, []*ir.Value{w})
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("vjp", grads[0])
	out, err := ref.Run(g,
		map[string]*tensor.Tensor{"seed": tensor.FromFloats(ir.T(ir.F64, 3), []float64{1, 10, 100}), "bad": tensor.New(ir.T(ir.F32, 3))},
		map[string]*tensor.Tensor{"w": tensor.FromFloats(ir.T(ir.F64, 3), []float64{1, 2, 3})})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{2, 40, 600}; !slices.Equal(out["vjp"].F, want) {
		t.Errorf("vjp = %v, want %v", out["vjp"].F, want)
	}
}
