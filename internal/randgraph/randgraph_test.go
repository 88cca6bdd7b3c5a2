package randgraph_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
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

// Over a thousand seeds the generator makes every kind of graph, every op the compiler's
// passes and code generator treat specially, graphs with several outputs, values and inputs of
// every dtype, zero-size values, scalars, vector-sided contractions, split-sized reductions,
// integer inputs ranging to their dtype's ends and pooling over odd rows.
func TestCoverage(t *testing.T) {
	const seeds = 1000
	seen := map[string]int{}
	for seed := range uint64(seeds) {
		g := seeded(seed)
		seen["kind "+g.Name]++
		kindFeatures(g, seen)
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
					lo, hi := v.Type.DType.IntLimits()
					if int64(r[0]) <= lo || int64(r[1]) > hi {
						seen["input range at a dtype's end"]++
					}
				}
			}
			if v.Op == "dot_general" && vectorSided(v) {
				seen["vector-sided contraction"]++
			}
			if v.Op == "broadcast_in_dim" && repeats(v) {
				seen["broadcast of a repeated size-1 dim"]++
			}
			if v.Op == "reshape" && v.Args[0].Op == "broadcast_in_dim" {
				seen["reshape of a broadcast"]++
			}
			if v.Op == "dot_general" {
				for _, a := range v.Args {
					if reshapesRepeats(a, 3) {
						seen["contraction operand: reshape of a repeating broadcast"]++
					}
				}
			}
			if v.Op == "pad" && v.Args[0].Type.Shape.NumElements() == 0 && n > 0 {
				seen["pad of an empty operand"]++
			}
			if strings.HasPrefix(v.Op, "reduce_") && v.Args[0].Type.Shape.NumElements() == 0 && n > 0 {
				seen["empty reduction"]++
			}
			if strings.HasPrefix(v.Op, "reduce_") && n == 1 && v.Args[0].Type.Shape.NumElements() >= 32768 {
				seen["split-sized full reduction"]++
			}
			if r := v.Attrs.Ints("range"); len(r) == 2 && float64(r[1])-float64(r[0]) >= 1<<63 {
				seen["input range wider than 2^63"]++
			}
			if r := v.Attrs.Ints("range"); len(r) == 2 && r[0] == -1<<62 && r[1] == 1<<62 {
				seen["i64 input range [-2^62, 2^62)"]++
			}
			if r := v.Attrs.Ints("range"); len(r) == 2 && r[0] < 0 && r[0] >= -5 && r[1] <= 10 {
				seen["input range around zero"]++
			}
			if (v.Op == "avg_pool2d" || v.Op == "max_pool2d") && v.Args[0].Type.Shape[3]%4 != 0 {
				seen["pooling over odd rows"]++
			}
		}
		if len(g.Outputs) > 1 {
			seen["several outputs"]++
		}
		if len(g.Inputs()) > 16 {
			seen["more inputs than the fusion reads limit"]++
		}
	}
	for _, k := range randgraph.Kinds() {
		if seen["kind "+k] == 0 {
			t.Errorf("%d seeds made no graph of kind %s", seeds, k)
		}
	}
	// What each targeted kind is for, in (almost) every graph of the kind.
	for _, c := range []struct {
		kind, feature string
		share         float64
	}{
		{"zero_size", "zero-size value", 1},
		{"persistent", "rows of a length not a multiple of 4", 1},
		{"contraction", "vector side", 0.4},
		{"mixed", "input not f32 or i32", 0.1},
	} {
		if n, m := seen["kind "+c.kind], seen[c.kind+": "+c.feature]; float64(m) < c.share*float64(n) {
			t.Errorf("%d of %d graphs of kind %s have %s, want %.0f%%", m, n, c.kind, c.feature, 100*c.share)
		}
	}
	for _, want := range []string{
		"input", "param", "constant", "iota",
		"neg", "exp", "tanh", "relu", "abs", "sigmoid", "sqrt", "add", "sub", "mul", "max", "div",
		"gt", "select", "cast",
		"reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
		"broadcast_in_dim", "transpose", "reshape", "slice", "concat", "pad",
		"dot_general", "conv2d", "max_pool2d", "avg_pool2d", "gather", "philox_uniform",
		"f64 value", "f16 value", "bf16 value", "i64 value", "i32 value", "i8 value", "u8 value", "bool value",
		"f32 input", "f64 input", "f16 input", "bf16 input", "i64 input", "i32 input", "i8 input", "u8 input", "bool input",
		"several outputs", "zero-size value", "scalar", "split-sized input", "input range at a dtype's end",
		"vector-sided contraction", "pooling over odd rows", "broadcast of a repeated size-1 dim",
		"reshape of a broadcast", "pad of an empty operand", "empty reduction", "split-sized full reduction",
		"input range wider than 2^63", "more inputs than the fusion reads limit", "i64 input range [-2^62, 2^62)",
		"input range around zero", "contraction operand: reshape of a repeating broadcast",
	} {
		if seen[want] == 0 {
			t.Errorf("%d seeds made no %s", seeds, want)
		}
	}
}

// kindFeatures counts, once per graph, the features its kind is meant to have.
func kindFeatures(g *ir.Graph, seen map[string]int) {
	has := map[string]bool{}
	for _, v := range g.Values {
		switch {
		case v.Type.Shape.NumElements() == 0:
			has["zero-size value"] = true
		case v.Op == "dot_general" && vectorSided(v):
			has["vector side"] = true
		case v.Op == "input" && v.Type.DType != ir.F32 && v.Type.DType != ir.I32:
			has["input not f32 or i32"] = true
		}
		if v.Op == "relu" && v.Type.Shape.Rank() == 4 && v.Type.Shape[3]%4 != 0 {
			has["rows of a length not a multiple of 4"] = true
		}
	}
	for f := range has {
		seen[g.Name+": "+f]++
	}
}

// reshapesRepeats reports whether v, or a value up to depth ops above it, is a reshape of a
// broadcast that repeats a dim: strides a contraction's operand copy must not take as contiguous.
func reshapesRepeats(v *ir.Value, depth int) bool {
	if v.Op == "reshape" && v.Args[0].Op == "broadcast_in_dim" && repeats(v.Args[0]) {
		return true
	}
	for _, a := range v.Args {
		if depth > 0 && reshapesRepeats(a, depth-1) {
			return true
		}
	}
	return false
}

// repeats reports whether a broadcast_in_dim repeats a size-1 operand dim (stride 0).
func repeats(v *ir.Value) bool {
	for i, d := range v.Attrs.Ints("dims") {
		if v.Args[0].Type.Shape[i] == 1 && v.Type.Shape[d] > 1 {
			return true
		}
	}
	return false
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
