package randgraph_test

import (
	"fmt"
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

// Over a few hundred seeds the generator makes every op the compiler's passes and code
// generator treat specially, graphs with several outputs, and values of every dtype.
func TestCoverage(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(300) {
		g := seeded(seed)
		for _, v := range g.Values {
			seen[v.Op]++
			seen[v.Type.DType.String()+" value"]++
		}
		if len(g.Outputs) > 1 {
			seen["several outputs"]++
		}
	}
	for _, want := range []string{
		"input", "param", "constant", "iota",
		"neg", "exp", "tanh", "relu", "abs", "sigmoid", "sqrt", "add", "sub", "mul", "max", "div",
		"gt", "select", "cast",
		"reduce_sum", "reduce_max",
		"broadcast_in_dim", "transpose", "reshape", "slice", "concat",
		"dot_general", "conv2d", "max_pool2d", "gather",
		"f64 value", "f16 value", "bf16 value", "i64 value", "i32 value", "i8 value", "u8 value", "bool value",
		"several outputs",
	} {
		if seen[want] == 0 {
			t.Errorf("300 seeds made no %s", want)
		}
	}
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
