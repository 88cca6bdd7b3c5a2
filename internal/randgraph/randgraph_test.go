package randgraph_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"golang.org/x/tools/txtar"
)

func seeded(seed uint64) *ir.Graph { return randgraph.Graph(rand.New(rand.NewPCG(seed, 7))) }

// Every generated graph verifies and round-trips through the text form, and a seed always
// gives the same graph.
func TestValid(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	for seed := range uint64(n) {
		g := seeded(seed)
		if err := ops.Verify(g); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, g)
		}
		if again := seeded(seed); again.String() != g.String() {
			t.Fatalf("seed %d: two different graphs:\n%s\n%s", seed, g, again)
		}
		back, err := ir.Parse("random.gir", []byte(g.String()))
		if err != nil || back.String() != g.String() {
			t.Fatalf("seed %d: text form does not round-trip: %v\n%s", seed, err, g)
		}
	}
}

// Over a few hundred seeds the generator makes every kind of graph, every op the compiler's
// passes and code generator treat specially, graphs with several outputs, values and inputs of
// every dtype, zero-size values, scalars, vector-sided contractions, split-sized reductions,
// integer inputs ranging to their dtype's ends and pooling over odd rows.
func TestCoverage(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(300) {
		g := seeded(seed)
		seen["kind "+g.Name]++
		for _, v := range g.Values {
			seen[v.Op]++
			seen[v.Type.DType.String()+" value"]++
			n := v.Type.Shape.NumElements()
			switch {
			case n == 0:
				seen["zero-size value"]++
			case v.Type.Shape.Rank() == 0:
				seen["scalar"]++
			case n >= 32768 && v.Op == "input":
				seen["split-sized input"]++
			}
			if v.Op == "input" {
				seen[v.Type.DType.String()+" input"]++
				if r := v.Attrs.Ints("range"); len(r) == 2 && v.Type.DType.IsInt() {
					lo, hi := extremes(v.Type.DType)
					if r[0] <= lo || r[1] > hi {
						seen["input range at a dtype's end"]++
					}
				}
			}
			if v.Op == "dot_general" && vectorSided(v) {
				seen["vector-sided contraction"]++
			}
			if (v.Op == "avg_pool2d" || v.Op == "max_pool2d") && v.Args[0].Type.Shape[3]%4 != 0 {
				seen["pooling over odd rows"]++
			}
		}
		if len(g.Outputs) > 1 {
			seen["several outputs"]++
		}
	}
	for _, k := range randgraph.Kinds() {
		if seen["kind "+k] == 0 {
			t.Errorf("300 seeds made no graph of kind %s", k)
		}
	}
	for _, want := range []string{
		"input", "param", "constant", "iota",
		"neg", "exp", "tanh", "relu", "abs", "sigmoid", "sqrt", "add", "sub", "mul", "max", "div",
		"gt", "select", "cast",
		"reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
		"broadcast_in_dim", "transpose", "reshape", "slice", "concat", "pad",
		"dot_general", "conv2d", "max_pool2d", "avg_pool2d", "gather",
		"f64 value", "f16 value", "bf16 value", "i64 value", "i32 value", "i8 value", "u8 value", "bool value",
		"f32 input", "f64 input", "f16 input", "bf16 input", "i64 input", "i32 input", "i8 input", "u8 input", "bool input",
		"several outputs", "zero-size value", "scalar", "split-sized input", "input range at a dtype's end",
		"vector-sided contraction", "pooling over odd rows",
	} {
		if seen[want] == 0 {
			t.Errorf("300 seeds made no %s", want)
		}
	}
}

// extremes are the least and greatest values of an integer dtype.
func extremes(d ir.DType) (int, int) {
	switch d {
	case ir.I8:
		return math.MinInt8, math.MaxInt8
	case ir.U8:
		return 0, math.MaxUint8
	case ir.I32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// vectorSided reports whether one operand of a dot_general has no free dims and the other two
// or more.
func vectorSided(v *ir.Value) bool {
	free := func(x *ir.Value, batch, contract string) int {
		return x.Type.Shape.Rank() - len(v.Attrs.Ints(batch)) - len(v.Attrs.Ints(contract))
	}
	l, r := free(v.Args[0], "lhs_batch", "lhs_contract"), free(v.Args[1], "rhs_batch", "rhs_contract")
	return min(l, r) == 0 && max(l, r) >= 2
}

// The graphs of a few seeds are pinned: a change to the generator changes what every test
// built on it checks, and should be seen in review.
func TestGolden(t *testing.T) {
	var files []txtar.File
	for _, seed := range []uint64{0, 1, 2, 3, 42} {
		files = append(files, txtar.File{Name: fmt.Sprintf("seed%d.gir", seed), Data: []byte(seeded(seed).String())})
	}
	r, _ := randgraph.FromBytes([]byte("softmax"))
	files = append(files, txtar.File{Name: "bytes-softmax.gir", Data: []byte(randgraph.Graph(r).String())})
	golden.CheckTxtar(t, filepath.Join("testdata", "graphs.txtar"),
		"Graphs randgraph.Graph makes for the seeds 0, 1, 2, 3 and 42 (rand.NewPCG(seed, 7)), and for FromBytes(\"softmax\").\n", files)
}

// Any fuzz input gives a valid graph.
func FuzzGraph(f *testing.F) {
	for _, s := range []string{"", "softmax", "\x00\x01\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := randgraph.FromBytes(data)
		if g := randgraph.Graph(r); ops.Verify(g) != nil {
			t.Fatalf("%v\n%s", ops.Verify(g), g)
		}
	})
}
