package compiler_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

var (
	randomGraphs = flag.Int("randomgraphs", 0, "graphs TestRandomGraphs runs (0: 60, -short 15)")
	firstSeed    = flag.Int("randomseed", 0, "the first seed TestRandomGraphs runs")
	onlyKind     = flag.String("randomkind", "", "run only the graphs of this kind (randgraph.Kinds) among them")
)

// targets are every code generation target, with and without TF32 tensor cores.
var targets = []ptx.Target{{SM: 80}, {SM: 86}, {SM: 89}, {SM: 90}, {SM: 80, TF32: true}, {SM: 89, TF32: true}}

// checkRandom is the property: g compiles for target, and on the simulator with every check
// on it computes what the reference interpreter computes on the same seeded inputs.
func checkRandom(t *testing.T, g *ir.Graph, target ptx.Target, seed uint64) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil { // a crash is one seed's failure, not the end of the run
			t.Fatalf("%v: panic: %v\n%s", target, p, g)
		}
	}()
	res, err := compiler.Compile(g, compiler.Options{Target: target})
	if err != nil {
		t.Fatalf("%v: %v\n%s", target, err, g)
	}
	inputs, params, err := tensor.SeededValues(g, seed)
	if err != nil {
		t.Fatalf("%v\n%s", err, g)
	}
	paramcheck.NonZero(t, params)
	// The default run, then the global race check with the blocks in reverse and in a seeded
	// random order.
	for i, opt := range []simdev.Options{{}, {RaceGlobal: true, Order: sim.Reverse}, {RaceGlobal: true, Order: sim.RandomOrder, Seed: seed}} {
		rep, err := check.RunWith(opt, res.Artifact, inputs, params)
		if err != nil {
			t.Fatalf("%v: run %d (%v blocks): %v\n%s", target, i, opt.Order, err, g)
		}
		for _, o := range rep.Outputs {
			// Random graphs compute NaN where the reference does (log of a negative, say):
			// that is agreement, and passes.
			if !o.Pass() {
				t.Errorf("%v: run %d (%v blocks): %s: %d bad, first %s\n%s", target, i, opt.Order, o.Name, o.Bad, o.First, g)
			}
		}
	}
}

// Random graphs from the passes' generator go through the whole pipeline — canonicalization,
// fusion, memory planning, PTX for every kernel, the executor on the simulator with all checks —
// for every target, with and without TF32, and match the reference interpreter on the source
// graph. -randomgraphs N runs more (outside CI), -randomseed S from another seed, -randomkind K
// only those of kind K.
func TestRandomGraphs(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	if *randomGraphs > 0 {
		n = *randomGraphs
	}
	for seed := *firstSeed; seed < *firstSeed+n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		g := randgraph.Graph(r)
		if *onlyKind != "" && g.Name != *onlyKind {
			continue
		}
		t.Run(fmt.Sprintf("%d_%s", seed, g.Name), func(t *testing.T) {
			checkRandom(t, g, targets[seed%len(targets)], uint64(seed))
		})
	}
}

// FuzzCompile is TestRandomGraphs from fuzz input: the bytes seed the generator (the first byte
// also picks the target). testdata/fuzz/FuzzCompile holds an input for each kind of graph.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"", "softmax", "\x00\x01\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, seed := randgraph.FromBytes(data)
		g := randgraph.Graph(r)
		target := targets[0]
		if len(data) > 0 {
			target = targets[int(data[0])%len(targets)]
		}
		checkRandom(t, g, target, seed)
	})
}

// The corpus has an input for each kind of graph the generator makes (kind-NAME).
func TestFuzzCorpusKinds(t *testing.T) {
	randgraph.CheckCorpusKinds(t, filepath.Join("testdata", "fuzz", "FuzzCompile"))
}
