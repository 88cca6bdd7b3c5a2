package passes

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestInMemoryLimit: a value of more than 2^31-1 elements builds when no kernel computes it (the
// attention pass replaces attention's scores, 2^31 here), and is one error naming it, at its
// source position, when a kernel would compute it: the scores with the attention pass disabled
// (fused or one kernel per op), or an intermediate no buffer holds but a row kernel runs over.
// Just under the limit builds.
func TestInMemoryLimit(t *testing.T) {
	// 1 × 2 heads × 32768 queries × 32768 keys: 2^31 scores.
	sdpa := func(d ir.DType, causal bool) func(b *frontend.Builder) {
		return func(b *frontend.Builder) {
			q, k, v := b.Input("q", d, 1, 2, 32768, 8), b.Input("k", d, 1, 2, 32768, 8), b.Input("v", d, 1, 2, 32768, 8)
			b.Output("o", frontend.ScaledDotProductAttention(q, k, v, causal))
		}
	}
	sum := func(rows, cols int) func(b *frontend.Builder) {
		return func(b *frontend.Builder) {
			x := b.Input("x", frontend.F32, 1, 1)
			b.Output("y", x.Expand(rows, cols).Exp().Sum(0, 1))
		}
	}
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		opt   Options
		want  string // "" when it builds; else the error's prefix after "pass memplan: "
	}{
		{"attention f32", sdpa(frontend.F32, false), Options{}, ""},
		{"attention causal f16", sdpa(frontend.F16, true), Options{}, ""},
		{"attention under autocast", sdpa(frontend.F32, true), Options{AMP: ir.F16}, ""},
		{"attention disabled", sdpa(frontend.F32, false), Options{DisablePasses: []string{"attention"}},
			"materialize_test.go:21: %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[1,2,32768,32768]: kernel k0_matmul_scale would compute it: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory (kernels index with 32-bit integers); a value may be larger only when a fused op replaces it"},
		{"attention and fusion disabled", sdpa(frontend.F32, true), Options{DisablePasses: []string{"attention", "fuse"}},
			"materialize_test.go:21: %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[1,2,32768,32768]: kernel k4_matmul would compute it: its dimensions multiply to 2147483648,"},
		{"a row kernel over 2^31", sum(2, 1<<30), Options{}, "materialize_test.go:27: %0 = broadcast_in_dim(%x) {dims=[0,1], shape=[2,1073741824]} : f32[2,1073741824]: kernel k0_sum would compute it: its dimensions multiply to 2147483648,"},
		{"a row kernel over 2^31-1", sum(1, ir.MaxElements), Options{}, ""},
	} {
		g, err := frontend.Build("m", tc.model)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res, err := Run(g, tc.opt)
		if tc.want != "" {
			if err == nil || !strings.HasPrefix(err.Error(), "pass memplan: "+tc.want) {
				t.Errorf("%s: err = %v\nwant prefix pass memplan: %s", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, b := range res.Kernels.Buffers {
			if b.Type.Shape.NumElements() > ir.MaxElements/2 {
				t.Errorf("%s: buffer %s : %s", tc.name, b.Name, b.Type)
			}
		}
	}
}

// checkInMemory on kernel graphs the pipeline does not make: an input buffer over the limit (the
// verifier refuses one first), and a value a persistent kernel's stage computes, named by its
// origin in the graph, or by the stage's body where it has none.
func TestCheckInMemory(t *testing.T) {
	big := ir.T(ir.F32, 2, 1<<30)
	src := ir.NewGraph("m")
	x := src.Input("x", ir.T(ir.F32, 1), nil)
	wide := src.Add("broadcast_in_dim", big, ir.Attrs{"dims": []int{1}, "shape": []int{2, 1 << 30}}, x)
	wide.Pos = "m.go:3"
	stage := func(origin bool) *Kernel {
		body := ir.NewGraph("s0_sum")
		bx := body.Input("x", x.Type, nil)
		bw := body.Add("broadcast_in_dim", big, wide.Attrs, bx)
		body.SetOutput("y", body.Add("reduce_sum", ir.T(ir.F32), ir.Attrs{"axes": []int{0, 1}}, bw))
		k := &Kernel{Name: "s0_sum", Kind: Row, Body: body, Origins: map[*ir.Value]*ir.Value{}}
		if origin {
			k.Origins[bw] = wide
		}
		return k
	}
	for _, tc := range []struct {
		name string
		kg   *KernelGraph
		want string
	}{
		{"input buffer", &KernelGraph{Buffers: []*Buffer{{Name: "x", Kind: InputBuffer, Type: big}}},
			"input %x : f32[2,1073741824]: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory"},
		{"stage with its origin", &KernelGraph{Kernels: []*Kernel{{Name: "k0_persistent", Kind: Persistent, Stages: []*Kernel{stage(true)}}}},
			"m.go:3: %0 = broadcast_in_dim(%x) {dims=[1], shape=[2,1073741824]} : f32[2,1073741824]: kernel k0_persistent would compute it: its dimensions multiply to 2147483648,"},
		{"stage without", &KernelGraph{Kernels: []*Kernel{{Name: "k0_persistent", Kind: Persistent, Stages: []*Kernel{stage(false)}}}},
			"%0 = broadcast_in_dim(%x) {dims=[1], shape=[2,1073741824]} : f32[2,1073741824]: kernel k0_persistent would compute it:"},
	} {
		if err := checkInMemory(src, tc.kg); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant prefix %s", tc.name, err, tc.want)
		}
	}
}
