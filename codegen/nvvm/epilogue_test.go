package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// A conv2d epilogue stores each group of four pixels as one st.global.v4.f32, as codegen/ptx
// does, whether or not the plane OH·OW is a power of two. With a 28×28 plane the pixel index
// went through urem by 784 and libNVVM could not prove the lanes consecutive: four scalar
// stores, 25% store efficiency on conv3x3.
func TestConvEpilogueStoresGroups(t *testing.T) {
	p := requireProducer(t)
	for _, hw := range []int{16, 28, 12} {
		t.Run(fmt.Sprintf("%dx%d", hw, hw), func(t *testing.T) {
			src := fmt.Sprintf(`graph g {
  input %%x : f32[2,8,%[1]d,%[1]d]
  param %%w : f32[16,8,3,3]
  param %%b : f32[16]
  %%0 = conv2d(%%x, %%w) {padding=[1,1]} : f32[2,16,%[1]d,%[1]d]
  %%1 = broadcast_in_dim(%%b) {dims=[1], shape=[2,16,%[1]d,%[1]d]} : f32[2,16,%[1]d,%[1]d]
  %%2 = add(%%0, %%1) : f32[2,16,%[1]d,%[1]d]
  %%3 = relu(%%2) : f32[2,16,%[1]d,%[1]d]
  output y = %%3
}`, hw)
			g, err := ir.Parse("conv.gir", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k_conv", Graph: g}
			if c, err := plan.ContractionPlan(k, plan.Target{SM: 80}); err != nil || c.Kind != "ffma" {
				t.Fatalf("plan %q, %v; want ffma", c.Kind, err)
			}
			text, _, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			vec, scalar := strings.Count(text, "st.global.v4.f32"), strings.Count(text, "st.global.f32")
			if vec == 0 || scalar != 0 {
				t.Errorf("%d st.global.v4.f32 and %d st.global.f32; want only vector stores", vec, scalar)
			}
			checkModule(t, p, []plan.Kernel{k}, 3)
		})
	}
}
