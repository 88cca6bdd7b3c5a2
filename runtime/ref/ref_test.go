package ref

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// builder adds nodes whose result types come from the op table.
type builder struct{ g *ir.Graph }

func (b builder) add(op string, a ir.Attrs, args ...*ir.Value) *ir.Value {
	types := make([]ir.Type, len(args))
	for i, x := range args {
		types[i] = x.Type
	}
	ty, err := ops.Infer(op, types, a)
	if err != nil {
		panic(err)
	}
	return b.g.Add(op, ty, a, args...)
}

// linear is x·wᵀ + bias, as the DSL writes it.
func (b builder) linear(x, w, bias *ir.Value) *ir.Value {
	y := b.add("dot_general", ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}}, x, w)
	bb := b.add("broadcast_in_dim", ir.Attrs{"shape": []int(y.Type.Shape), "dims": []int{1}}, bias)
	return b.add("add", nil, y, bb)
}

func (b builder) conv(x, w, bias *ir.Value) *ir.Value {
	y := b.add("conv2d", ir.Attrs{"stride": []int{1, 1}, "padding": []int{1, 1}, "dilation": []int{1, 1}, "groups": 1}, x, w)
	bb := b.add("broadcast_in_dim", ir.Attrs{"shape": []int(y.Type.Shape), "dims": []int{1}}, bias)
	return b.add("add", nil, y, bb)
}

// cnnGraph is the cnn example: two conv-relu-maxpool stages and two linear layers.
func cnnGraph(batch int) *ir.Graph {
	g := ir.NewGraph("cnn")
	b := builder{g: g}
	f32 := func(s ...int) ir.Type { return ir.T(ir.F32, s...) }
	x := g.Input("x", f32(batch, 3, 28, 28), nil)
	p := func(name string, s ...int) *ir.Value {
		return g.Param(name, f32(s...), ir.Attrs{"init": "normal", "std": 0.1})
	}
	c1w, c1b := p("conv1.weight", 16, 3, 3, 3), p("conv1.bias", 16)
	c2w, c2b := p("conv2.weight", 32, 16, 3, 3), p("conv2.bias", 32)
	f1w, f1b := p("fc1.weight", 128, 1568), p("fc1.bias", 128)
	f2w, f2b := p("fc2.weight", 10, 128), p("fc2.bias", 10)
	pool := ir.Attrs{"kernel": []int{2, 2}, "stride": []int{2, 2}}
	h := b.add("max_pool2d", pool, b.add("relu", nil, b.conv(x, c1w, c1b)))
	h = b.add("max_pool2d", pool, b.add("relu", nil, b.conv(h, c2w, c2b)))
	h = b.add("reshape", ir.Attrs{"shape": []int{batch, 1568}}, h)
	h = b.add("relu", nil, b.linear(h, f1w, f1b))
	g.SetOutput("logits", b.linear(h, f2w, f2b))
	return g
}

func randomBindings(t testing.TB, g *ir.Graph) (inputs, params map[string]*tensor.Tensor) {
	inputs, params = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = tensor.RandomInput(v, 1)
	}
	for _, v := range g.Params() {
		x, err := tensor.Initialize(v, 1)
		if err != nil {
			t.Fatal(err)
		}
		params[v.Name] = x
	}
	return inputs, params
}

func TestCNNDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g := cnnGraph(8)
	in, ps := randomBindings(t, g)
	run := func(procs int) *tensor.Tensor {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		out, err := Run(g, in, ps)
		if err != nil {
			t.Fatal(err)
		}
		return out["logits"]
	}
	one, four := run(1), run(4)
	if one.Type.String() != "f32[8,10]" {
		t.Fatalf("logits type %s", one.Type)
	}
	for i := range one.F {
		if math.Float64bits(one.F[i]) != math.Float64bits(four.F[i]) {
			t.Fatalf("element %d: %v with GOMAXPROCS=1, %v with 4", i, one.F[i], four.F[i])
		}
	}
}

func TestRunErrors(t *testing.T) {
	g := ir.NewGraph("linreg")
	b := builder{g: g}
	x := g.Input("x", ir.T(ir.F32, 8, 2), nil)
	w := g.Param("linear.weight", ir.T(ir.F32, 5, 2), nil)
	bias := g.Param("linear.bias", ir.T(ir.F32, 5), nil)
	g.SetOutput("y", b.linear(x, w, bias))
	ok := map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 8, 2))}
	ps := map[string]*tensor.Tensor{"linear.weight": tensor.New(ir.T(ir.F32, 5, 2)), "linear.bias": tensor.New(ir.T(ir.F32, 5))}
	for _, c := range []struct {
		name       string
		in, params map[string]*tensor.Tensor
		want       string
	}{
		{"wrong shape", map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 8, 3))}, ps, "input x: want f32[8,2], have f32[8,3]"},
		{"wrong dtype", map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F16, 8, 2))}, ps, "input x: want f32[8,2], have f16[8,2]"},
		{"missing input", nil, ps, "missing input x"},
		{"missing param", ok, map[string]*tensor.Tensor{"linear.weight": ps["linear.weight"]}, "missing parameter linear.bias"},
		{"unknown input", map[string]*tensor.Tensor{"x": ok["x"], "z": ok["x"]}, ps, "unknown input z: the graph linreg declares no such input"},
		{"malformed", map[string]*tensor.Tensor{"x": {Type: ir.T(ir.F32, 8, 2)}}, ps, "input x: malformed f32[8,2] tensor (0 floats, 0 ints)"},
	} {
		_, err := Run(g, c.in, c.params)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Run(g, ok, ps); err != nil {
		t.Errorf("valid bindings: %v", err)
	}
}

func TestEvalErrorNamesNode(t *testing.T) {
	g := ir.NewGraph("emb")
	b := builder{g: g}
	table := g.Param("wte", ir.T(ir.F32, 4, 2), nil)
	idx := g.Input("tokens", ir.T(ir.I64, 3), nil)
	e := b.add("gather", nil, table, idx)
	e.Pos = "model.go:9"
	g.SetOutput("y", e)
	in := map[string]*tensor.Tensor{"tokens": {Type: ir.T(ir.I64, 3), I: []int64{0, 7, 1}}}
	_, err := Run(g, in, map[string]*tensor.Tensor{"wte": tensor.New(ir.T(ir.F32, 4, 2))})
	want := `model.go:9: %0 = gather(%wte, %tokens) : f32[3,2]: index 7 (element 1 of the indices) is out of range [0, 4) for table f32[4,2]`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestVerifyFirst(t *testing.T) {
	g := ir.NewGraph("bad")
	x := g.Input("x", ir.T(ir.F32, 2), nil)
	g.SetOutput("y", g.Add("add", ir.T(ir.F32, 3), nil, x, x))
	_, err := Run(g, map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 2))}, nil)
	if err == nil || !strings.Contains(err.Error(), "result type is f32[3], but the op computes f32[2]") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkCNN runs the cnn example at batch 64 (see docs/perf.md).
func BenchmarkCNN(b *testing.B) {
	g := cnnGraph(64)
	in, ps := randomBindings(b, g)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(g, in, ps); err != nil {
			b.Fatal(err)
		}
	}
}

// A graph in the text form runs as written: attributes parse to the kinds the op table expects.
func TestRunParsed(t *testing.T) {
	src := `graph text {
  input %x : f32[2,3]
  input %idx : i32[2]
  %0 = cast(%x) {to=bf16} : bf16[2,3]
  %1 = cast(%0) {to=f32} : f32[2,3]
  %2 = pad(%1) {high=[0,1], low=[1,0], value=0} : f32[3,4]
  %3 = reduce_max(%2) {axes=[1], keepdims=false} : f32[3]
  %4 = constant() {dtype=f32, shape=[3], value=[0.5]} : f32[3]
  %5 = mul(%3, %4) : f32[3]
  %6 = iota() {dim=0, dtype=i64, shape=[3]} : i64[3]
  %7 = gather(%5, %idx) : f32[2]
  %8 = concat(%7, %7) {axis=0} : f32[4]
  output y = %8
  output i = %6
}
`
	g, err := ir.Parse("text.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{
		"x":   tensor.FromFloats(ir.T(ir.F32, 2, 3), []float64{1.01, -2, -3, -4, -5, -6}),
		"idx": tensor.FromFloats(ir.T(ir.I32, 2), []float64{2, 1}),
	}
	out, err := Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Rows of the padded matrix: [0,0,0,0], [1.0078125 (1.01 in bf16), -2, -3, 0], [-4, -5, -6, 0].
	if got := fmt.Sprint(out["y"].F, out["i"].I); got != "[0 0.50390625 0 0.50390625] [0 1 2]" {
		t.Errorf("got %s", got)
	}
}

// Run recycles dead intermediates into the tensor pool: runs at once and one after another must
// neither see another run's values nor hand out a buffer still in use, and the caller's inputs,
// parameters and outputs stay intact.
func TestRecycledBuffersStayPrivate(t *testing.T) {
	g := cnnGraph(2)
	in, ps := randomBindings(t, g)
	want, err := Run(g, in, ps)
	if err != nil {
		t.Fatal(err)
	}
	keep := want["logits"].Clone()
	x := in["x"].Clone()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 3 {
				out, err := Run(g, in, ps)
				if err == nil && !slices.Equal(out["logits"].F, keep.F) {
					err = fmt.Errorf("a concurrent run computed other logits")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(want["logits"].F, keep.F) || !slices.Equal(in["x"].F, x.F) {
		t.Fatal("a later run changed an earlier run's output or the input")
	}
}
