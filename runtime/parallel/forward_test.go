package parallel

import (
	"github.com/gcomp/gcomp/internal/paramcheck"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// Forward over N simulated devices gives the single-device run's outputs at the global batch.
func TestForwardEqualsOneDevice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(*frontend.Builder)
		batch int
		n     int
		slow  bool // -short (and so the race pass) leaves it out
	}{
		{"mlp", mlp.Model, 6, 2, false},
		{"mlp", mlp.Model, 6, 3, true},
		{"rnn", rnn.Model, 4, 4, false},
		{"transformer", transformer.Model, 4, 2, true},
	} {
		if tc.slow && testing.Short() {
			continue
		}
		build := func(batch int) *ir.Graph {
			g, err := frontend.Build(tc.name, tc.model, frontend.WithBatch(batch))
			if err != nil {
				t.Fatal(err)
			}
			paramcheck.Randomize(g, 0.1) // the transformer's zero biases, drawn nonzero
			return g
		}
		global, shard := build(tc.batch), build(tc.batch/tc.n)
		plan, err := NewPlan(global, shard, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		in, params, err := tensor.SeededValues(global, 1)
		if err != nil {
			t.Fatal(err)
		}
		paramcheck.NonZero(t, params)
		whole, err := compiler.Compile(global, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := runShard(simdev.New(simdev.Options{}), whole.Artifact, params, in)
		if err != nil {
			t.Fatal(err)
		}
		part, err := compiler.Compile(shard, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		devs := make([]executor.Device, tc.n)
		for i := range devs {
			devs[i] = simdev.New(simdev.Options{})
		}
		got, err := Forward(devs, part.Artifact, plan, params, in)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			g := got[name]
			if g == nil || !g.Type.Equal(w.Type) || !slices.Equal(g.F, w.F) || !slices.Equal(g.I, w.I) {
				t.Errorf("%s at batch %d over %d devices: output %s differs from one device's", tc.name, tc.batch, tc.n, name)
			}
		}
	}
}
