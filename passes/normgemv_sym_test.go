package passes_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// Over a symbolic batch the norm of x [batch, 256] that only a linear layer reads moves into
// the GEMV's prologue as it does at the bound's static size (a regression: the merged body's
// inputs lost the buffers' symbolic sizes, it failed checkBody, and the norm kept its kernel),
// and the merged kernel reads and writes the symbolic buffers, up to gemv.MaxPrologueRows rows
// (8 for a LayerNorm, its rows staged in shared memory; 4, gemv.MaxUnstagedRows, for an RMSNorm).
// Above it no prologue forms either way.
func TestNormGEMVSymbolicBatch(t *testing.T) {
	for _, c := range []struct {
		norm  string
		bound int
		fused bool
	}{{"layernorm", 1, true}, {"layernorm", 4, true}, {"rmsnorm", 3, true}, {"layernorm", 8, true}, {"rmsnorm", 8, false}, {"layernorm", 9, false}} {
		for _, symbolic := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_%d_symbolic=%v", c.norm, c.bound, symbolic), func(t *testing.T) {
				var opts []frontend.Option
				if symbolic {
					opts = append(opts, frontend.WithMaxBatch(c.bound))
				}
				g, err := frontend.Build("m", func(b *frontend.Builder) {
					x := b.Input("x", ir.F32, b.Batch(c.bound), 256)
					var h *frontend.Tensor
					if c.norm == "rmsnorm" {
						h = nn.NewRMSNorm(b, "norm", 256, 1e-5).Forward(x)
					} else {
						h = nn.NewLayerNorm(b, "norm", 256).Forward(x)
					}
					b.Output("y", nn.NewLinear(b, "fc", 256, 64).Forward(h))
				}, opts...)
				if err != nil {
					t.Fatal(err)
				}
				res, err := passes.Run(g, passes.Options{})
				if err != nil {
					t.Fatal(err)
				}
				ks := res.Kernels.Kernels
				var names []string
				for _, k := range ks {
					names = append(names, k.Name)
				}
				if fused := len(ks) == 1 && ks[0].Kind == passes.Contraction; fused != c.fused {
					t.Fatalf("kernels %v, want the norm in the GEMV: %v", names, c.fused)
				}
				if !c.fused || !symbolic {
					return
				}
				k := ks[0]
				if !strings.Contains(k.Name, "matmul") || !slices.ContainsFunc(k.Body.Values, func(v *ir.Value) bool { return v.Op == "reduce_sum" }) {
					t.Fatalf("kernel %s has no norm prologue", k.Name)
				}
				for i, in := range k.Body.Inputs() {
					if b := k.Reads[i]; !in.Type.Equal(b.Type) {
						t.Errorf("input %s : %s, buffer %s", in.Name, in.Type, b.Type)
					}
				}
				if o, b := k.Body.Outputs[0], k.Writes[0]; b.Type.Sym == nil || !o.Value.Type.Equal(b.Type) {
					t.Errorf("output %s : %s, buffer %s (want it symbolic)", o.Name, o.Value.Type, b.Type)
				}
			})
		}
	}
}
