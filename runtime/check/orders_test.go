package check_test

import (
	"github.com/gcomp/gcomp/internal/paramcheck"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/sim"
)

// RaceOrders are the simulator settings the block-order tests run under: the global race
// check with the blocks of every launch in reverse, and in a seeded random order. A kernel
// whose blocks race on global memory, or that needs its blocks in index order, fails here
// although it passes in the simulator's default run.
var raceOrders = []simdev.Options{
	{RaceGlobal: true, Order: sim.Reverse},
	{RaceGlobal: true, Order: sim.RandomOrder, Seed: 1},
}

// Every example, the Fashion-MNIST classifiers included, runs race-free and matches the
// reference under both block orders.
func TestExamplesBlockOrders(t *testing.T) {
	for _, m := range examples.All() {
		t.Run(m.Name, func(t *testing.T) {
			if m.Slow && testing.Short() {
				t.Skip("-short")
			}
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatal(err)
			}
			paramcheck.Randomize(g, 0.1) // the examples' zero biases, drawn nonzero
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			inputs, params := values(t, g, 1)
			for _, opt := range raceOrders {
				rep, err := check.RunWith(opt, res.Artifact, inputs, params)
				if err != nil {
					t.Fatalf("%v blocks: %v", opt.Order, err)
				}
				for _, o := range rep.Outputs {
					if !o.Pass() {
						t.Errorf("%v blocks: %s: %d elements outside tolerance; first %s", opt.Order, o.Name, o.Bad, o.First)
					}
				}
			}
		})
	}
}

// A split reduction's hand-off is race-free with its fences and a race without the writers'
// fence: the check reaches compiled modules, and can fail.
func TestRaceGlobalCatchesMissingFence(t *testing.T) {
	g, err := ir.Parse("sum.gir", []byte(`graph sum {
  input %x : f32[300,700]
  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]
  output s = %0
}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params := values(t, g, 1)
	text := string(res.Artifact.PTX)
	if strings.Count(text, "fence.acq_rel.gpu;") != 2 {
		t.Fatalf("the module is not the two-fence hand-off:\n%s", text)
	}
	for _, opt := range raceOrders {
		if _, err := check.RunWith(opt, res.Artifact, inputs, params); err != nil {
			t.Fatalf("%v: %v", opt.Order, err)
		}
		noFence := &artifact.Artifact{PTX: []byte(strings.Replace(text, "fence.acq_rel.gpu;", "", 1)), Plan: res.Artifact.Plan}
		_, err := check.RunWith(opt, noFence, inputs, params)
		if err == nil || !strings.Contains(err.Error(), "global-memory race") || !strings.Contains(err.Error(), "reads byte") {
			t.Errorf("%v: without the writers' fence: %v, want a global-memory race", opt.Order, err)
		}
		if _, err := check.Run(noFence, inputs, params); err != nil {
			t.Errorf("without the race check: %v", err)
		}
	}
}
