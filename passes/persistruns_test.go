package passes_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// persistChain is a chain of n small products over rows rows: one persistent kernel.
func persistChain(t *testing.T, rows, n int) *ir.Graph {
	t.Helper()
	g, err := frontend.Build("chain", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, rows, 8)
		w := b.Param("w", ir.T(ir.F32, 8, 8), frontend.Uniform(-1, 1))
		for range n {
			x = x.Matmul(w).Tanh()
		}
		b.Output("y", x)
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The persist pass records the runs it forms, and FusionOptions.PersistRuns makes it form
// exactly those: none, the recorded ones again, or an error naming a run the schedule does not
// have.
func TestPersistRuns(t *testing.T) {
	g := persistChain(t, 4, 6)
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs := res.Kernels.PersistRuns
	if len(runs) != 1 || runs[0].Len < 2 || len(runs[0].Labels) != runs[0].Len {
		t.Fatalf("runs %+v, want one", runs)
	}
	kernels := func(opt passes.Options) (string, error) {
		res, err := passes.Run(g, opt)
		if err != nil {
			return "", err
		}
		var names []string
		for _, k := range res.Kernels.Kernels {
			names = append(names, k.Name)
		}
		return strings.Join(names, " "), nil
	}
	want, _ := kernels(passes.Options{})
	none := []passes.PersistRun{}
	for _, tc := range []struct {
		name string
		runs *[]passes.PersistRun
		want string // kernels, or the error
	}{
		{"the recorded runs", &runs, want},
		{"none", &none, "k0_matmul_tanh k1_matmul_tanh k2_matmul_tanh k3_matmul_tanh k4_matmul_tanh k5_matmul"},
		{"past the schedule", &[]passes.PersistRun{{Start: 5, Len: 3, Labels: []string{"a", "b", "c"}}}, "the schedule has 6 kernels"},
		{"other kernels", &[]passes.PersistRun{{Start: 0, Len: 2, Labels: []string{"matmul_tanh", "add"}}}, "the schedule has kernels [matmul_tanh matmul_tanh] there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kernels(passes.Options{Fusion: passes.FusionOptions{PersistRuns: tc.runs}})
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
