package passes

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestEagerKernelsBuiltWhenNeeded: the unfused kernel graph is built for the cost report's eager
// baseline, and once more only when fuse is disabled (the later passes then work on it), never
// before fuse forms its own.
func TestEagerKernelsBuiltWhenNeeded(t *testing.T) {
	g := ir.NewGraph("m")
	x := g.Input("x", ir.T(ir.F32, 4, 8), nil)
	y := g.Add("exp", x.Type, nil, x)
	g.SetOutput("y", g.Add("reduce_sum", ir.T(ir.F32, 4), ir.Attrs{"axes": []int{1}}, y))
	build := eagerKernels
	defer func() { eagerKernels = build }()
	for _, tc := range []struct {
		name    string
		disable []string
		want    int
	}{
		{"all passes", nil, 1},
		{"fuse disabled", []string{"fuse"}, 2},
		{"schedule disabled", []string{"schedule"}, 1},
	} {
		builds := 0
		eagerKernels = func(g *ir.Graph) (*KernelGraph, error) { builds++; return build(g) }
		if _, err := Run(g, Options{DisablePasses: tc.disable}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if builds != tc.want {
			t.Errorf("%s: %d builds of the unfused kernel graph, want %d", tc.name, builds, tc.want)
		}
	}
}
