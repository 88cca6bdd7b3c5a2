package nvvm

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// TestStaticViewsMMA: a static tensor-core product reading an operand through views (heads
// merged back) whose heads align 16-byte chunks, which codegen/ptx copies as chunks while this
// producer's template keeps the element copies: both fill the same shared tiles, so the results
// are codegen/ptx's bit for bit (checkKernel) and within tolerance of the reference; f16, bf16
// and tf32, the views on either side.
func TestStaticViewsMMA(t *testing.T) {
	p := requireProducer(t)
	elem := regexp.MustCompile(`ld\.global\.u16|cp\.async\.ca\.shared\.global.*, 4, `)
	for _, c := range []struct {
		d    string
		tf32 bool
		hd   int // elements per head along the contiguous dim: 16 bytes
		lhs  bool
	}{
		{"f16", false, 8, false},
		{"bf16", false, 8, true},
		{"f32", true, 4, false},
		{"f32", true, 4, true},
	} {
		t.Run(fmt.Sprintf("%s/tf32=%v/lhs=%v", c.d, c.tf32, c.lhs), func(t *testing.T) {
			// Two heads of hd merged back: [2, 40, hd] read as [40, 2·hd].
			var src string
			if c.lhs {
				src = fmt.Sprintf("graph g {\n  input %%h : %[1]s[2,40,%[2]d]\n  input %%w : %[1]s[24,%[3]d]\n  %%0 = transpose(%%h) {perm=[1,0,2]} : %[1]s[40,2,%[2]d]\n  %%1 = reshape(%%0) {shape=[40,%[3]d]} : %[1]s[40,%[3]d]\n  %%2 = dot_general(%%1, %%w) {lhs_contract=[1], rhs_contract=[1]} : %[1]s[40,24]\n  output y = %%2\n}\n", c.d, c.hd, 2*c.hd)
			} else {
				src = fmt.Sprintf("graph g {\n  input %%x : %[1]s[24,40]\n  input %%v : %[1]s[2,40,%[2]d]\n  %%0 = transpose(%%v) {perm=[1,0,2]} : %[1]s[40,2,%[2]d]\n  %%1 = reshape(%%0) {shape=[40,%[3]d]} : %[1]s[40,%[3]d]\n  %%2 = dot_general(%%x, %%1) {lhs_contract=[1], rhs_contract=[0]} : %[1]s[24,%[3]d]\n  output y = %%2\n}\n", c.d, c.hd, 2*c.hd)
			}
			g, err := ir.Parse("views.gir", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			target := plan.Target{SM: 80, TF32: c.tf32}
			k := plan.Kernel{Name: "k_views", Graph: g}
			if cp, err := plan.ContractionPlan(k, target); err != nil || cp.Kind != "tensor core" {
				t.Fatalf("plan %q, %v; want tensor core", cp.Kind, err)
			}
			text, _, err := ptx.Module([]plan.Kernel{k}, target)
			if err != nil {
				t.Fatal(err)
			}
			if elem.MatchString(text) {
				t.Fatal("codegen/ptx copies elements, not the views' 16-byte chunks")
			}
			checkModuleFor(t, p, []plan.Kernel{k}, 5, target)
		})
	}
}
